// SPDX-License-Identifier: Apache-2.0
#include "node_keys.h"

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <malleo/message.h>

#include "curve_keys.h"

namespace malleo::cli {

namespace {

namespace fs = std::filesystem;

// Written whole with the mode it keeps (O_EXCL unless replacing; never through a symlink).
std::string writeKeyFile(const std::string &path, const std::string &text, mode_t mode, bool replace)
{
	if (replace)
		unlink(path.c_str());
	int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return fmt::format("cannot write {}: {}", path, std::strerror(errno));
	fchmod(fd, mode);
	const bool whole = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
	if (close(fd) != 0 || !whole)
		return fmt::format("cannot write {}: {}", path, std::strerror(errno));
	return {};
}

} // namespace

std::optional<NodeKeyFiles> makeNodeKeys(const std::string &dir, const std::string &node, bool force,
					 Failure &failure)
{
	if (!isValidId(node)) {
		failure = {kExitBadInput, fmt::format("'{}' is no node id ({})", printableText(node), kIdRule)};
		return std::nullopt;
	}
	if (!zmq_has("curve")) {
		failure = {kExitFailed, "this libzmq has no CURVE security (built without libsodium): no keys can be "
					"made; install a libzmq built with it (Debian: libzmq5)"};
		return std::nullopt;
	}
	std::error_code ec;
	if (!fs::is_directory(dir, ec)) {
		fs::create_directories(dir, ec);
		if (ec) {
			failure = {kExitFailed, fmt::format("cannot create {}: {}", dir, ec.message())};
			return std::nullopt;
		}
		chmod(dir.c_str(), 0700);
	}
	NodeKeyFiles files{node, (fs::path(dir) / (node + ".key")).string(), (fs::path(dir) / (node + ".pub")).string(),
			   "", true};
	for (const std::string &path : {files.secretFile, files.publicFile})
		if (!force && fs::symlink_status(path, ec).type() != fs::file_type::not_found) {
			failure = {kExitBadInput,
				   fmt::format("{} exists: keys are not replaced unless --force (the node's peers would "
					       "need its new .pub)",
					       path)};
			return std::nullopt;
		}
	char publicKey[41] = {}, secretKey[41] = {};
	if (zmq_curve_keypair(publicKey, secretKey) != 0) {
		failure = {kExitFailed, fmt::format("zmq_curve_keypair: {}", zmq_strerror(zmq_errno()))};
		return std::nullopt;
	}
	files.publicKey = publicKey;
	const std::string secretText =
		fmt::format("# malleo CURVE secret key of node {}: keep it on {} only, readable by its agent alone\n{}\n",
			    node, node, secretKey);
	const std::string publicText =
		fmt::format("# malleo CURVE public key of node {}: copy it to every node that lets {} in\n{}\n", node,
			    node, publicKey);
	if (std::string e = writeKeyFile(files.secretFile, secretText, 0600, force); !e.empty()) {
		failure = {kExitFailed, e};
		return std::nullopt;
	}
	if (std::string e = writeKeyFile(files.publicFile, publicText, 0644, force); !e.empty()) {
		failure = {kExitFailed, e};
		return std::nullopt;
	}
	return files;
}

std::optional<NodeKeyFiles> ensureNodeKeys(const std::string &dir, const std::string &node, Failure &failure)
{
	NodeKeyFiles files{node, (fs::path(dir) / (node + ".key")).string(), (fs::path(dir) / (node + ".pub")).string(),
			   "", false};
	std::string secret;
	if (readKeyFile(files.secretFile, secret).empty() && readKeyFile(files.publicFile, files.publicKey).empty())
		return files;
	return makeNodeKeys(dir, node, true, failure);
}

} // namespace malleo::cli
