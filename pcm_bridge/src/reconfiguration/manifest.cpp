// SPDX-License-Identifier: Apache-2.0
#include "reconfiguration/manifest.h"

#include <cstring>

namespace malleo::pcm {

namespace {

class Writer
{
public:
	explicit Writer(std::vector<unsigned char> &out) : out_(out) {}
	void integer(std::int64_t value)
	{
		const auto *p = reinterpret_cast<const unsigned char *>(&value);
		out_.insert(out_.end(), p, p + sizeof value);
	}
	void bytes(const void *data, std::size_t size)
	{
		integer(static_cast<std::int64_t>(size));
		const auto *p = static_cast<const unsigned char *>(data);
		out_.insert(out_.end(), p, p + size);
	}
	void text(const std::string &s) { bytes(s.data(), s.size()); }

private:
	std::vector<unsigned char> &out_;
};

class Reader
{
public:
	explicit Reader(const std::vector<unsigned char> &in) : in_(in) {}
	bool integer(std::int64_t &value)
	{
		if (at_ + sizeof value > in_.size())
			return false;
		std::memcpy(&value, in_.data() + at_, sizeof value);
		at_ += sizeof value;
		return true;
	}
	bool bytes(std::vector<unsigned char> &out)
	{
		std::int64_t size = 0;
		if (!integer(size) || size < 0 || at_ + static_cast<std::size_t>(size) > in_.size())
			return false;
		out.assign(in_.begin() + static_cast<std::ptrdiff_t>(at_),
			   in_.begin() + static_cast<std::ptrdiff_t>(at_ + size));
		at_ += static_cast<std::size_t>(size);
		return true;
	}
	bool text(std::string &s)
	{
		std::vector<unsigned char> b;
		if (!bytes(b))
			return false;
		s.assign(b.begin(), b.end());
		return true;
	}
	bool done() const { return at_ == in_.size(); }

private:
	const std::vector<unsigned char> &in_;
	std::size_t at_ = 0;
};

void writeStore(Writer &w, const Store &store)
{
	w.integer(static_cast<std::int64_t>(store.size()));
	for (const auto &[key, blob] : store) {
		w.text(key);
		w.integer(static_cast<std::int64_t>(blob.type));
		w.integer(blob.count);
		w.bytes(blob.bytes.data(), blob.bytes.size());
	}
}

bool readStore(Reader &r, Store &store)
{
	std::int64_t n = 0;
	if (!r.integer(n) || n < 0)
		return false;
	store.clear();
	for (std::int64_t i = 0; i < n; ++i) {
		std::string key;
		Blob blob;
		std::int64_t type = 0;
		if (!r.text(key) || !r.integer(type) || !r.integer(blob.count) || !r.bytes(blob.bytes))
			return false;
		blob.type = static_cast<BaseType>(type);
		store[key] = std::move(blob);
	}
	return true;
}

} // namespace

std::vector<unsigned char> encodeManifest(const std::vector<BufferMove> &moves, const Store &replicated)
{
	std::vector<unsigned char> out;
	Writer w(out);
	w.integer(static_cast<std::int64_t>(moves.size()));
	for (const auto &move : moves) {
		w.text(move.spec.name);
		w.integer(static_cast<std::int64_t>(move.spec.distribution));
		w.integer(static_cast<std::int64_t>(move.spec.base));
		w.integer(move.spec.elementLength);
		w.integer(move.spec.halo);
	}
	writeStore(w, replicated);
	return out;
}

bool decodeManifest(const std::vector<unsigned char> &bytes, std::vector<BufferSpec> &specs, Store &replicated)
{
	Reader r(bytes);
	std::int64_t n = 0;
	if (!r.integer(n) || n < 0)
		return false;
	specs.assign(static_cast<std::size_t>(n), {});
	for (auto &spec : specs) {
		std::int64_t distribution = 0, base = 0;
		if (!r.text(spec.name) || !r.integer(distribution) || !r.integer(base) ||
		    !r.integer(spec.elementLength) || !r.integer(spec.halo))
			return false;
		spec.distribution = static_cast<Distribution>(distribution);
		spec.base = static_cast<BaseType>(base);
	}
	return readStore(r, replicated) && r.done();
}

std::vector<unsigned char> encodeStore(const Store &store)
{
	std::vector<unsigned char> out;
	Writer w(out);
	writeStore(w, store);
	return out;
}

bool decodeStore(const std::vector<unsigned char> &bytes, Store &store)
{
	Reader r(bytes);
	return readStore(r, store) && r.done();
}

} // namespace malleo::pcm
