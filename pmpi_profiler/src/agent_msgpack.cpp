// SPDX-License-Identifier: Apache-2.0
#include "agent_msgpack.h"

#include <cstring>

namespace malleo::pmpi {

void MsgpackWriter::put(const void *bytes, size_t n)
{
	if (overflow || n > capacity - size) {
		overflow = true;
		return;
	}
	std::memcpy(data + size, bytes, n);
	size += n;
}

void MsgpackWriter::putByte(uint8_t byte)
{
	put(&byte, 1);
}

void MsgpackWriter::putBigEndian(uint64_t value, int bytes)
{
	uint8_t out[8];
	for (int i = 0; i < bytes; ++i)
		out[i] = uint8_t(value >> (8 * (bytes - 1 - i)));
	put(out, size_t(bytes));
}

void MsgpackWriter::mapHeader(uint32_t entries)
{
	if (entries < 16) {
		putByte(uint8_t(0x80 | entries));
	} else if (entries <= 0xffff) {
		putByte(0xde);
		putBigEndian(entries, 2);
	} else {
		putByte(0xdf);
		putBigEndian(entries, 4);
	}
}

void MsgpackWriter::arrayHeader(uint32_t items)
{
	if (items < 16) {
		putByte(uint8_t(0x90 | items));
	} else if (items <= 0xffff) {
		putByte(0xdc);
		putBigEndian(items, 2);
	} else {
		putByte(0xdd);
		putBigEndian(items, 4);
	}
}

void MsgpackWriter::string(const char *text)
{
	string(text, std::strlen(text));
}

void MsgpackWriter::string(const char *text, size_t length)
{
	if (length < 32) {
		putByte(uint8_t(0xa0 | length));
	} else if (length <= 0xff) {
		putByte(0xd9);
		putBigEndian(length, 1);
	} else if (length <= 0xffff) {
		putByte(0xda);
		putBigEndian(length, 2);
	} else {
		putByte(0xdb);
		putBigEndian(length, 4);
	}
	put(text, length);
}

// The shortest form, as nlohmann::json::to_msgpack writes it: the agent's schema checks only that
// the value is an unsigned integer.
void MsgpackWriter::unsignedInt(uint64_t value)
{
	if (value < 128) {
		putByte(uint8_t(value));
	} else if (value <= 0xff) {
		putByte(0xcc);
		putBigEndian(value, 1);
	} else if (value <= 0xffff) {
		putByte(0xcd);
		putBigEndian(value, 2);
	} else if (value <= 0xffffffff) {
		putByte(0xce);
		putBigEndian(value, 4);
	} else {
		putByte(0xcf);
		putBigEndian(value, 8);
	}
}

void MsgpackWriter::real(double value)
{
	uint64_t bits;
	std::memcpy(&bits, &value, sizeof(bits));
	putByte(0xcb);
	putBigEndian(bits, 8);
}

void MsgpackWriter::boolean(bool value)
{
	putByte(value ? 0xc3 : 0xc2);
}

namespace {

constexpr const char *kClientName = "malleo-pmpi";

void beginMessage(MsgpackWriter &w, const char *type, uint64_t id, const MessageOrigin &origin,
		  uint32_t extraFields)
{
	w.mapHeader(6 + extraFields);
	w.string("v");
	w.unsignedInt(kSchemaVersion);
	w.string("type");
	w.string(type);
	w.string("from");
	w.string(kClientName);
	w.string("id");
	w.unsignedInt(id);
	w.string("app");
	w.string(origin.app, origin.appLength);
	w.string("rank");
	w.unsignedInt(origin.rank);
}

} // namespace

void writeRegister(MsgpackWriter &w, uint64_t id, const MessageOrigin &origin, uint64_t pid,
		   uint64_t size)
{
	beginMessage(w, "register", id, origin, 4);
	w.string("pid");
	w.unsignedInt(pid);
	w.string("size");
	w.unsignedInt(size);
	// Only the PCM bridge knows whether the application can change its size.
	w.string("malleable");
	w.boolean(false);
	w.string("units");
	w.unsignedInt(1);
}

void writeAppReport(MsgpackWriter &w, uint64_t id, const MessageOrigin &origin,
		    const AppReport &report)
{
	const bool withTimes = report.iterationTimeCount > 0;
	beginMessage(w, "app_report", id, origin,
		     2 + (withTimes ? 1 : 0) + (report.withBytes ? 2 : 0));
	w.string("cpu_share");
	w.real(report.cpuShare);
	w.string("active");
	w.boolean(report.active);
	if (withTimes) {
		w.string("iteration_times");
		w.arrayHeader(uint32_t(report.iterationTimeCount));
		for (size_t i = 0; i < report.iterationTimeCount; ++i)
			w.real(report.iterationTimes[i]);
	}
	if (report.withBytes) {
		w.string("bytes_local");
		w.real(report.bytesLocal);
		w.string("bytes_remote");
		w.real(report.bytesRemote);
	}
}

void writeDeregister(MsgpackWriter &w, uint64_t id, const MessageOrigin &origin)
{
	beginMessage(w, "deregister", id, origin, 0);
}

} // namespace malleo::pmpi
