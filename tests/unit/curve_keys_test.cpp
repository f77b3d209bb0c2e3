// SPDX-License-Identifier: Apache-2.0
// Key files as `malleo keygen` writes them, and the allowed keys of a directory and of the key ring that reads it
// again when it changes: a node's key added or removed counts without a restart.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "curve_keys.h"
#include "key_ring.h"

using namespace malleo;
namespace fs = std::filesystem;

namespace {

const std::string kKey1 = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
const std::string kKey2 = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID";

struct TempDir {
	fs::path path;
	TempDir()
	{
		char pattern[] = "/tmp/malleo-keys-XXXXXX";
		path = mkdtemp(pattern);
	}
	~TempDir() { fs::remove_all(path); }
	std::string write(const std::string &name, const std::string &text) const
	{
		std::ofstream(path / name) << text;
		return (path / name).string();
	}
};

} // namespace

TEST_SUITE("curve keys")
{
	TEST_CASE("a key file: one key line, comments and blanks aside; anything else is one line naming the file")
	{
		TempDir d;
		std::string key;
		CHECK(readKeyFile(d.write("n1.key", "# a comment\n\n  " + kKey1 + "  \n"), key) == "");
		CHECK(key == kKey1);
		for (const std::string &bad : {std::string(""), std::string("# only a comment\n"), std::string("short\n"),
					       kKey1 + "\n" + kKey2 + "\n", std::string(40, ' ') + "x\n",
					       std::string(40, '~') + "\n"}) {
			const std::string path = d.write("bad.key", bad);
			const std::string e = readKeyFile(path, key);
			CHECK_MESSAGE(e.find(path) != std::string::npos, bad);
		}
		CHECK(readKeyFile((d.path / "missing.key").string(), key).find("cannot be read") != std::string::npos);
		CHECK(readKeyFile(d.path.string(), key).find("is a directory") != std::string::npos);
	}

	TEST_CASE("a directory of .pub files: the file name is the node")
	{
		TempDir d;
		d.write("n1.pub", kKey1 + "\n");
		d.write("n2.pub", "# n2\n" + kKey2 + "\n");
		d.write("README", "not a key\n");
		d.write("n1.key", "secrets are not read here\n");
		AllowedKeys keys;
		CHECK(readAllowedKeysDir(d.path.string(), keys) == "");
		CHECK(keys.nodeOfKey.at(kKey1) == "n1");
		CHECK(keys.keyOfNode.at("n2") == kKey2);
		CHECK(keys.nodeOfKey.size() == 2);

		d.write("n3.pub", kKey1 + "\n"); // n1's key again, for another node
		AllowedKeys twice;
		CHECK(readAllowedKeysDir(d.path.string(), twice).find("the same public key is given for nodes") != std::string::npos);
		fs::remove(d.path / "n3.pub");
		d.write("bad id.pub", kKey2 + "\n");
		AllowedKeys badName;
		CHECK(readAllowedKeysDir(d.path.string(), badName).find("no node id") != std::string::npos);
		AllowedKeys none;
		CHECK(readAllowedKeysDir((d.path / "nowhere").string(), none).find("not a directory") != std::string::npos);
	}

	TEST_CASE("the key ring reads the directory again once it changed: a .pub removed revokes its node")
	{
		TempDir d;
		d.write("n1.pub", kKey1 + "\n");
		d.write("n2.pub", kKey2 + "\n");
		SecurityConfig security;
		security.allowedKeysDir = d.path.string();
		KeyRing ring(security);
		CHECK(ring.load() == "");
		CHECK(ring.nodeOf(kKey2) == "n2");
		CHECK(ring.keyOf("n1") == kKey1);
		CHECK(ring.refresh() == ""); // unchanged: nothing read
		fs::remove(d.path / "n2.pub");
		// A directory's modification time has the file system's resolution: make the change visible whatever it is.
		fs::last_write_time(d.path, fs::last_write_time(d.path) + std::chrono::seconds(1));
		CHECK(ring.refresh() == "");
		CHECK(ring.nodeOf(kKey2) == "");
		CHECK(ring.nodeOf(kKey1) == "n1");
	}
}
