// SPDX-License-Identifier: Apache-2.0
// The C++ API (include/malleo/pcm.hpp) over the reconfigurator: here the bridge owns the buffers, so probe() can move
// them itself.
#include "malleo/pcm.hpp"

#include <cstdio>
#include <cstdlib>
#include <new>

#include "memory/page_move.h"
#include "reconfiguration/reconfigurator.h"

#define MALLEO_PCM_EXPORT __attribute__((visibility("default")))

namespace malleo::malleable {

namespace {

pcm::BaseType baseType(MPI_Datatype type)
{
	if (type == MPI_INT || type == MPI_INT32_T)
		return pcm::BaseType::Int32;
	if (type == MPI_INT64_T || type == MPI_LONG_LONG)
		return pcm::BaseType::Int64;
	if (type == MPI_FLOAT)
		return pcm::BaseType::Float32;
	if (type == MPI_DOUBLE)
		return pcm::BaseType::Float64;
	return pcm::BaseType::Byte;
}

Operation operation(malleo::Operation op)
{
	switch (op) {
	case malleo::Operation::Split:
		return Operation::split;
	case malleo::Operation::Merge:
		return Operation::merge;
	case malleo::Operation::Migrate:
		return Operation::migrate;
	case malleo::Operation::None:
		break;
	}
	return Operation::none;
}

pcm::BufferSpec specOf(const std::string &name, Distribution distribution, MPI_Datatype type,
		      std::int64_t element_length, std::int64_t halo)
{
	pcm::BufferSpec spec;
	spec.name = name;
	spec.distribution = static_cast<pcm::Distribution>(distribution);
	spec.base = baseType(type);
	spec.elementLength = element_length;
	spec.halo = halo;
	return spec;
}

static_assert(static_cast<int>(Distribution::independent) == static_cast<int>(pcm::Distribution::Independent));
static_assert(static_cast<int>(Distribution::block1d) == static_cast<int>(pcm::Distribution::Block1d));

} // namespace

MALLEO_PCM_EXPORT void releaseStorage(void *storage)
{
	pcm::releaseElements(storage);
}

MALLEO_PCM_EXPORT Session &Session::start(int *argc, char ***argv)
{
	static Session session;
	// probe() parks the processes that leave and can return to them, on every process of this program.
	pcm::Reconfigurator::get().reuseLeavers();
	if (pcm::Reconfigurator::get().start(argc, argv) != MPI_SUCCESS) {
		std::fprintf(stderr, "malleo-pcm: MPI_Init failed\n");
		std::exit(1);
	}
	return session;
}

void Session::place(Buffer &buffer, std::int64_t count)
{
	// Not a collective: a joined process places its buffers while the others compute. The reconfigurator knows the
	// shares of the current configuration (balanced or weighted), so the offset follows from the global count.
	buffer.count_ = count;
	const auto counts = pcm::Reconfigurator::get().currentCounts(buffer.global_);
	buffer.offset_ = 0;
	for (int slot = 0; slot < rank(); ++slot)
		buffer.offset_ += counts[static_cast<std::size_t>(slot)];
}

void Session::adopt(Buffer &buffer, void *storage, std::int64_t count)
{
	buffer.storage_.reset(static_cast<unsigned char *>(storage));
	buffer.capacity_ = count;
	place(buffer, count);
}

MALLEO_PCM_EXPORT Buffer &Session::distribute(const std::string &name, Distribution distribution, MPI_Datatype type,
					       std::int64_t element_length, std::int64_t global_count, std::int64_t halo)
{
	auto buffer = std::make_unique<Buffer>();
	buffer->name_ = name;
	buffer->distribution_ = distribution;
	buffer->type_ = type;
	buffer->itemBytes_ = static_cast<std::int64_t>(pcm::baseSize(baseType(type)));
	buffer->elementLength_ = element_length;
	buffer->halo_ = halo;
	buffer->global_ = global_count;
	pcm::Reconfigurator::get().expectBuffer(specOf(name, distribution, type, element_length, halo), global_count);

	if (!receive(*buffer))
		allocate(*buffer);
	buffers_.push_back(std::move(buffer));
	return *buffers_.back();
}

void Session::allocate(Buffer &buffer)
{
	const auto counts = pcm::Reconfigurator::get().currentCounts(buffer.global_);
	const auto count = counts[static_cast<std::size_t>(rank())];
	void *storage = pcm::allocateElements(count, buffer.halo_, buffer.elementBytes(), true,
					      pcm::firstElement(static_cast<pcm::Distribution>(buffer.distribution_), counts,
								rank()));
	if (!storage)
		throw std::bad_alloc();
	adopt(buffer, storage, count);
}

bool Session::receive(Buffer &buffer)
{
	for (auto &move : pcm::Reconfigurator::get().joinedBuffers()) {
		if (move.spec.name != buffer.name_ || !move.newData)
			continue;
		// A joined process had no buffer: the reconfigurator allocated the one it received into.
		adopt(buffer, move.newData, move.newCount);
		move.newData = nullptr;
		move.allocated = false;
		return true;
	}
	return false;
}

void Session::rejoin()
{
	auto &reconfigurator = pcm::Reconfigurator::get();
	for (auto &buffer : buffers_) {
		if (receive(*buffer))
			continue;
		// Every process registers the same buffers, so this is only a buffer the manifest did not carry.
		allocate(*buffer);
	}
	// In place: the program holds references to these bytes (replicate() returned them).
	const auto &joined = reconfigurator.joinedReplicated();
	for (auto &[name, bytes] : replicated_)
		if (auto found = joined.find(name); found != joined.end() && found->second.bytes.size() == bytes.size())
			std::memcpy(bytes.data(), found->second.bytes.data(), bytes.size());
}

MALLEO_PCM_EXPORT std::vector<unsigned char> &Session::replicatedBytes(const std::string &name, std::size_t size, const void *initial)
{
	const auto &joined = pcm::Reconfigurator::get().joinedReplicated();
	std::vector<unsigned char> bytes(size);
	if (auto found = joined.find(name); found != joined.end() && found->second.bytes.size() == size)
		bytes = found->second.bytes;
	else
		std::memcpy(bytes.data(), initial, size);
	replicated_.emplace_back(name, std::move(bytes));
	return replicated_.back().second;
}

MALLEO_PCM_EXPORT ProbeResult Session::probe()
{
	auto &reconfigurator = pcm::Reconfigurator::get();
	ProbeResult result;
	const bool activation = reconfigurator.activationProbe();
	const auto outcome = reconfigurator.decide();
	result.operation = operation(reconfigurator.plan().op);
	if (activation) {
		// The operation that activated this spare process happened at this probe, for the others too.
		result.joined = true;
		return result;
	}
	if (outcome == pcm::Outcome::None) {
		result.operation = Operation::none;
		return result;
	}
	if (outcome == pcm::Outcome::Failed) {
		result.failed = true;
		result.error = reconfigurator.error();
		return result;
	}
	std::vector<pcm::BufferMove> moves;
	for (auto &buffer : buffers_) {
		pcm::BufferMove move;
		move.spec = specOf(buffer->name_, buffer->distribution_, buffer->type_, buffer->elementLength_,
				   buffer->halo_);
		move.oldData = buffer->storage_.get();
		move.oldCount = buffer->count_;
		move.oldCapacity = buffer->capacity_;
		move.inPlace = true;
		move.discardOld = true;
		moves.push_back(move);
	}
	pcm::Store replicated;
	for (const auto &[name, bytes] : replicated_) {
		pcm::Blob blob;
		blob.count = static_cast<std::int64_t>(bytes.size());
		blob.bytes = bytes;
		replicated[name] = std::move(blob);
	}
	const bool leaving = reconfigurator.leaving();
	if (!reconfigurator.reconfigure(moves, replicated, {})) {
		result.failed = true;
		result.error = reconfigurator.error();
		return result;
	}
	if (leaving) {
		for (auto &buffer : buffers_) {
			buffer->storage_.reset();
			buffer->count_ = 0;
			buffer->offset_ = 0;
		}
		if (!reconfigurator.parkAfterLeaving()) {
			result.left = true;
			return result;
		}
		rejoin();
		result.operation = operation(reconfigurator.plan().op);
		result.joined = true;
		return result;
	}
	for (std::size_t i = 0; i < moves.size(); ++i) {
		Buffer &buffer = *buffers_[i];
		auto &move = moves[i];
		if (move.newData == buffer.storage_.get()) {
			// Kept in place, or grown into room the block had. The block keeps its size, and the kernel may
			// take back the pages past what it now holds when it needs memory; until then a merge that grows
			// the block again receives into them without a first touch.
			const auto used = static_cast<std::size_t>((move.newCount + 2 * buffer.halo_) * buffer.elementBytes());
			const auto room = static_cast<std::size_t>((buffer.capacity_ - move.newCount) * buffer.elementBytes());
			pcm::freePagesLazily(buffer.storage_.get() + used + 1, room);
			place(buffer, move.newCount);
		} else {
			adopt(buffer, move.newData, move.newCount);  // the reconfigurator allocated it
		}
	}
	return result;
}

MALLEO_PCM_EXPORT bool Session::joined() const
{
	return pcm::Reconfigurator::get().startStatus() != pcm::StartStatus::Started;
}

MALLEO_PCM_EXPORT MPI_Comm Session::comm() const
{
	return pcm::Reconfigurator::get().comm();
}

MALLEO_PCM_EXPORT int Session::rank() const
{
	return pcm::Reconfigurator::get().rank();
}

MALLEO_PCM_EXPORT int Session::size() const
{
	return pcm::Reconfigurator::get().size();
}

MALLEO_PCM_EXPORT std::int64_t Session::probes() const
{
	return pcm::Reconfigurator::get().probes();
}

MALLEO_PCM_EXPORT void Session::remainingIterations(std::int64_t remaining)
{
	if (remaining >= 0)
		pcm::Reconfigurator::get().setRemainingIterations(remaining);
}

MALLEO_PCM_EXPORT void Session::finish()
{
	auto &reconfigurator = pcm::Reconfigurator::get();
	if (reconfigurator.comm() != MPI_COMM_NULL)
		reconfigurator.finish();
	else
		reconfigurator.waitForEnd();  // returns at once after a probe() that returned left: the end has come
	MPI_Finalize();
}

} // namespace malleo::malleable
