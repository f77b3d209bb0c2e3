// SPDX-License-Identifier: Apache-2.0
// The C++ API of libmalleo_pcm, for new codes: register the distributed buffers once, call probe() at the top of
// the iteration loop, and the reconfiguration (command, agreement, data movement, new communicator) happens inside
// it. The same machinery runs the PCM C API (pcm_api.h); docs/pcm-api.md documents both.
//
//	auto &session = malleo::malleable::Session::start(&argc, &argv);
//	auto &grid = session.distribute("grid", Distribution::block1d, MPI_DOUBLE, rows, columns, 1);
//	auto &step = session.replicate<std::int64_t>("step", 0);
//	for (; step < steps; ++step) {
//		const auto event = session.probe();
//		if (event.left)
//			break;           // the run ended while this process was out of the computation
//		... compute on grid.data<double>(), grid.count() columns from grid.offset() ...
//	}
//	session.finish();            // collective; calls MPI_Finalize
//
// A process that a merge or migration takes out of the computation waits parked inside probe(), without CPU and
// with its buffers freed; a later split or migration may take it back, and probe() then returns to it as to a
// spare process activated there (joined set). It returns with left set only when the run has ended meanwhile.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace malleo::malleable {

// Frees a buffer's storage, which the session allocated (not for programs to call).
void releaseStorage(void *storage);

// How a buffer is spread over the active processes (the values of the redistribution's own enum).
enum class Distribution {
	independent = 0,  // any process may hold any elements: only the counts matter
	block1d = 1,      // contiguous blocks in rank order: neighbours stay neighbours
};

enum class Operation { none, split, merge, migrate };

struct ProbeResult {
	Operation operation = Operation::none;  // what happened at this probe
	bool failed = false;  // an operation was asked for and did not happen: everything is as it was
	std::string error;    // why, when failed
	bool left = false;    // the run ended while this process was not active: leave the loop and call finish()
	// This process was activated by `operation` (a split or migration) at this probe: its buffers, replicated
	// values, rank and communicator are the ones it received. Set for a spare process's first probe and for a
	// process taken back after it had left; state the program keeps outside the session is stale then.
	bool joined = false;
	bool changed() const { return operation != Operation::none && !failed; }
};

// A distributed buffer the session owns: `count()` elements of `element_length` items of `type`, with `halo`
// spare elements on each side (ghost columns). data() points at the first element of the block, past the halo.
class Buffer
{
public:
	const std::string &name() const { return name_; }
	template<typename T> T *data() { return reinterpret_cast<T *>(block()); }
	void *block() { return storage_ ? storage_.get() + halo_ * elementBytes() : nullptr; }
	std::int64_t count() const { return count_; }
	std::int64_t offset() const { return offset_; }  // global index of the first local element
	std::int64_t global() const { return global_; }
	std::int64_t elementBytes() const { return elementLength_ * itemBytes_; }

private:
	friend class Session;
	std::string name_;
	Distribution distribution_ = Distribution::block1d;
	MPI_Datatype type_ = MPI_BYTE;
	std::int64_t itemBytes_ = 1;
	std::int64_t elementLength_ = 1;
	std::int64_t halo_ = 0;
	std::int64_t count_ = 0;
	std::int64_t capacity_ = 0;  // elements storage_ has room for (halos excluded)
	std::int64_t offset_ = 0;
	std::int64_t global_ = 0;
	// Allocated by the session, so that a reconfiguration can hand over the buffer it filled instead of copying it
	// in: private memory, or with MALLEO_PCM_SHARED_PAGES=on shared memory whose pages others may take over.
	struct FreeBytes {
		void operator()(unsigned char *bytes) const { releaseStorage(bytes); }
	};
	std::unique_ptr<unsigned char, FreeBytes> storage_;
};

class Session
{
public:
	// MPI_Init and the pool: a spare process returns from here only once it is activated (joined() is then
	// true, and the buffers it registers arrive with their data), or never (it finalizes MPI and exits).
	static Session &start(int *argc, char ***argv);

	// Registers a buffer of `global_count` elements, each `element_length` items of `type` (MPI_INT,
	// MPI_INT64_T, MPI_FLOAT, MPI_DOUBLE or MPI_BYTE). Starting processes get a balanced block (zeroed);
	// a joined process gets the data it was sent. Register in the same order on every process.
	Buffer &distribute(const std::string &name, Distribution distribution, MPI_Datatype type,
			   std::int64_t element_length, std::int64_t global_count, std::int64_t halo = 0);

	// A value kept equal on every process (an iteration counter): a joined process gets the current one.
	template<typename T> T &replicate(const std::string &name, T initial)
	{
		static_assert(std::is_trivially_copyable_v<T>);
		auto &bytes = replicatedBytes(name, sizeof(T), &initial);
		return *reinterpret_cast<T *>(bytes.data());
	}

	// Collective over the active processes, at the top of each iteration. A process that leaves stays inside
	// until it is activated again (joined) or the run ends (left).
	ProbeResult probe();

	bool joined() const;
	MPI_Comm comm() const;
	int rank() const;
	int size() const;
	std::int64_t probes() const;
	// The iterations left, counting the one about to start (call before probe(), at every iteration or once: it
	// counts down by one a probe until said again); the agent's decision modules weigh a resize's cost against
	// the time it would save over them (sweetspot). A negative count is ignored.
	void remainingIterations(std::int64_t remaining);

	// Collective at the end over the active processes; a process whose probe() returned left only finalizes.
	// Calls MPI_Finalize.
	void finish();

private:
	Session() = default;
	std::vector<unsigned char> &replicatedBytes(const std::string &name, std::size_t size, const void *initial);
	void place(Buffer &buffer, std::int64_t count);
	// `storage` (allocateElements) becomes the buffer's, holding `count` elements.
	void adopt(Buffer &buffer, void *storage, std::int64_t count);
	// A zeroed block of this process's balanced share.
	void allocate(Buffer &buffer);
	// A joined process: the buffer's data from the reconfiguration that activated it; false if none came.
	bool receive(Buffer &buffer);
	// A process activated again inside probe(): its buffers and replicated values from that reconfiguration.
	void rejoin();

	std::vector<std::unique_ptr<Buffer>> buffers_;
	std::vector<std::pair<std::string, std::vector<unsigned char>>> replicated_;
};

} // namespace malleo::malleable
