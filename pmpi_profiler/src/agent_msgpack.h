// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>

#include <malleo/wire.h>

namespace malleo::pmpi {

// The profiler writes its messages to the agent by hand rather than with the agent's codec
// (malleo_wire, <malleo/message.h>): that codec builds a JSON document on the heap and brings a
// JSON library and libfmt into every MPI process the profiler is preloaded into, which STYLE.md
// rule 20 keeps out. What it shares is the wire format's numbers (<malleo/wire.h>: header, schema
// version, limits) and the proof: tests/unit/profiler_messages_test.cpp decodes what these
// functions write with the agent's codec and validates it against the agent's schema.

// The few MessagePack forms the agent messages need, written into a fixed buffer: the preload
// library stays free of a JSON library and of allocation while encoding. Writes past the end set
// `overflow` and are dropped, so a caller checks once at the end.
struct MsgpackWriter {
	uint8_t *data;
	size_t capacity;
	size_t size = 0;
	bool overflow = false;

	void mapHeader(uint32_t entries);
	void arrayHeader(uint32_t items);
	void string(const char *text);
	void string(const char *text, size_t length);
	void unsignedInt(uint64_t value);
	void real(double value);
	void boolean(bool value);

private:
	void put(const void *bytes, size_t n);
	void putByte(uint8_t byte);
	void putBigEndian(uint64_t value, int bytes);
};

// Every message of this process names its application and rank.
struct MessageOrigin {
	const char *app;
	size_t appLength;
	uint64_t rank;
};

// An app_report's own fields (docs/protocol.md); the times stay the caller's.
struct AppReport {
	double cpuShare = 0.0;
	bool active = true;
	const double *iterationTimes = nullptr; // seconds; rank 0 speaks for the application
	size_t iterationTimeCount = 0;		 // none: no field; at most kReportIterationTimesMax
	bool withBytes = false;
	double bytesLocal = 0.0; // per iteration
	double bytesRemote = 0.0;
};

// The bodies of the profiler's messages, `id` being the envelope's.
void writeRegister(MsgpackWriter &w, uint64_t id, const MessageOrigin &origin, uint64_t pid,
		   uint64_t size);
void writeAppReport(MsgpackWriter &w, uint64_t id, const MessageOrigin &origin,
		    const AppReport &report);
void writeDeregister(MsgpackWriter &w, uint64_t id, const MessageOrigin &origin);

} // namespace malleo::pmpi
