// SPDX-License-Identifier: Apache-2.0
// The PCM C API over the reconfigurator. The application owns its buffers here (unlike the C++ API), so each call
// describes the one buffer of the papers' skeleton: columns of yDim elements with a ghost column on each side.
#include "pcm_api.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "memory/page_move.h"
#include "memory/shared_pages.h"
#include "reconfiguration/reconfigurator.h"

using malleo::Operation;
using malleo::pcm::BaseType;
using malleo::pcm::Blob;
using malleo::pcm::BufferMove;
using malleo::pcm::Distribution;
using malleo::pcm::Outcome;
using malleo::pcm::Reconfigurator;
using malleo::pcm::StartStatus;
using malleo::pcm::Store;

// Weak: a program written as the papers' Fig. 6 defines PCM_COMM_WORLD itself (tests/pcm/bridge/pcm_skeleton.c), and
// its definition is then the one the library uses. A strong one here made two definitions of one variable, which
// AddressSanitizer stops as an ODR violation at start (the program's interposes the library's either way).
extern "C" {
__attribute__((visibility("default"), weak)) MPI_Comm PCM_COMM_WORLD = MPI_COMM_NULL;
}

namespace {

Store gStore;           // PCM_Store'd values of this process
std::string gError;     // PCM_Error_string

// The columns a process activated by a split received: the reconfigurator's buffer itself, handed over by the first
// PCM_Load of PCM_KEY_DATA and released then, rather than a copy kept in gStore for the whole run.
struct FreeBytes {
	void operator()(void *bytes) const { malleo::pcm::releaseElements(bytes); }
};
std::unique_ptr<void, FreeBytes> gJoinedColumns;
std::size_t gJoinedColumnsSize = 0;

bool validType(int type)
{
	return type >= PCM_INT && type <= PCM_CHAR;
}

BaseType baseType(int type)
{
	switch (type) {
	case PCM_INT:
		return BaseType::Int32;
	case PCM_LONG:
		return BaseType::Int64;
	case PCM_FLOAT:
		return BaseType::Float32;
	case PCM_DOUBLE:
		return BaseType::Float64;
	default:
		return BaseType::Byte;
	}
}

Blob intBlob(int value)
{
	Blob blob;
	blob.type = BaseType::Int32;
	blob.count = 1;
	blob.bytes.resize(sizeof value);
	std::memcpy(blob.bytes.data(), &value, sizeof value);
	return blob;
}

// After a split activated this process: the keys of Fig. 6, from the manifest and the received columns.
void storeJoinedSplit(Reconfigurator &reconfigurator)
{
	for (const auto &[key, blob] : reconfigurator.joinedReplicated())
		gStore[key] = blob;
	for (auto &move : reconfigurator.joinedBuffers()) {
		if (move.spec.name != PCM_KEY_DATA)
			continue;
		gJoinedColumnsSize = static_cast<std::size_t>((move.newCount + 2 * move.spec.halo) * move.elementBytes());
		gJoinedColumns.reset(move.newData);  // a joined process has no buffer of its own: the reconfigurator allocated it
		gStore[PCM_KEY_DATAWIDTH] = intBlob(static_cast<int>(move.newCount));
		move.newData = nullptr;
		move.allocated = false;
	}
	reconfigurator.joinedBuffers().clear();
}

[[noreturn]] void leave(Reconfigurator &reconfigurator)
{
	gStore.clear();
	gJoinedColumns.reset();
	PCM_COMM_WORLD = MPI_COMM_NULL;
	reconfigurator.waitForEnd();
	MPI_Finalize();
	std::exit(0);
}

void updateWorld(Reconfigurator &reconfigurator, int *rank, int *total, MPI_Comm *comm)
{
	PCM_COMM_WORLD = reconfigurator.comm();
	if (comm)
		*comm = reconfigurator.comm();
	if (rank)
		*rank = reconfigurator.rank();
	if (total)
		*total = reconfigurator.size();
}

// The one buffer of the papers' skeleton, as PCM_Split and PCM_Merge describe it: this process's `x_dim` columns of
// `y_dim` items of `type` in `data`, with a ghost column on each side.
BufferMove columns(void *data, int type, int x_dim, int y_dim)
{
	BufferMove move;
	move.spec.name = PCM_KEY_DATA;
	move.spec.distribution = Distribution::Block1d;
	move.spec.base = baseType(type);
	move.spec.elementLength = y_dim;
	move.spec.halo = 1;
	move.oldData = data;
	move.oldCount = x_dim;
	return move;
}

int split(void *data, int type, int *iterations, int *xDim, int *yDim, int *rank, int *total, MPI_Comm *comm)
{
	Reconfigurator &reconfigurator = Reconfigurator::get();
	if (reconfigurator.plan().op != Operation::Split || !validType(type))
		return PCM_FAILURE;
	BufferMove move = columns(data, type, *xDim, *yDim);
	// The columns are rewritten in place: with weights a block may grow past the buffer, and then the split
	// fails on every process with the data intact. A process that keeps the start of its block keeps it where it is.
	move.capacity = *xDim;
	move.inPlace = true;
	Store replicated;
	replicated[PCM_KEY_ITERATOR] = intBlob(*iterations);
	replicated[PCM_KEY_DATAROWS] = intBlob(*yDim);
	std::vector<BufferMove> moves{move};
	if (!reconfigurator.reconfigure(moves, replicated, {})) {
		gError = reconfigurator.error();
		return PCM_FAILURE;
	}
	// Balanced blocks never grow on a split (balancedCounts), and weighted ones were checked against capacity.
	BufferMove &done = moves.front();
	if (done.newData != data) {
		const std::size_t column = static_cast<std::size_t>(done.elementBytes());
		std::memcpy(static_cast<unsigned char *>(data) + column,
			    static_cast<unsigned char *>(done.newData) + column,
			    column * static_cast<std::size_t>(done.newCount));
		malleo::pcm::releaseElements(done.newData);
	}
	*xDim = static_cast<int>(done.newCount);
	updateWorld(reconfigurator, rank, total, comm);
	return PCM_SUCCESS;
}

int merge(void *data, int type, int *xDim, int *yDim, void *new_buffer, int mergecnts, int *rank, int *total,
	  MPI_Comm *comm)
{
	Reconfigurator &reconfigurator = Reconfigurator::get();
	if (reconfigurator.plan().op != Operation::Merge || !validType(type))
		return PCM_FAILURE;
	const bool leaving = reconfigurator.leaving();
	BufferMove move = columns(data, type, *xDim, *yDim);
	move.newData = leaving ? nullptr : new_buffer;
	move.capacity = *yDim > 0 ? mergecnts / *yDim - 2 : 0;
	move.discardOld = true;  // the skeleton frees data after the merge: what this process keeps moves by pages
	std::vector<BufferMove> moves{move};
	const bool fits = leaving || (new_buffer && mergecnts >= (*xDim + 2) * *yDim);
	if (!fits || !reconfigurator.reconfigure(moves, {}, {})) {
		gError = fits ? reconfigurator.error() : "PCM_Merge: new_buffer is missing or smaller than PCM_Merge_datacnts said";
		// The skeleton switches to new_buffer whatever happens: give it the old columns.
		if (!leaving && new_buffer && mergecnts >= (*xDim + 2) * *yDim)
			std::memcpy(new_buffer, data,
				    static_cast<std::size_t>((*xDim + 2) * *yDim) * malleo::pcm::baseSize(baseType(type)));
		return PCM_FAILURE;
	}
	if (leaving)
		leave(reconfigurator);
	*xDim = static_cast<int>(moves.front().newCount);
	updateWorld(reconfigurator, rank, total, comm);
	return PCM_SUCCESS;
}

} // namespace

extern "C" {

__attribute__((visibility("default"))) int MPI_PCM_Init(int *argc, char ***argv)
{
	Reconfigurator &reconfigurator = Reconfigurator::get();
	malleo::pcm::allocateForMallocedBuffers();  // before start: a joining process receives its columns there
	const int rc = reconfigurator.start(argc, argv);
	if (rc != MPI_SUCCESS)
		return rc;
	if (reconfigurator.startStatus() == StartStatus::Splitted)
		storeJoinedSplit(reconfigurator);
	else if (reconfigurator.startStatus() == StartStatus::Migrated)
		gStore = reconfigurator.joinedStore();
	PCM_COMM_WORLD = reconfigurator.comm();
	return MPI_SUCCESS;
}

__attribute__((visibility("default"))) int PCM_Init(MPI_Comm)
{
	PCM_COMM_WORLD = Reconfigurator::get().comm();
	return PCM_SUCCESS;
}

__attribute__((visibility("default"))) int PCM_Process_Status(void)
{
	switch (Reconfigurator::get().startStatus()) {
	case StartStatus::Migrated:
		return PCM_MIGRATED;
	case StartStatus::Splitted:
		return PCM_SPLITTED;
	case StartStatus::Started:
		break;
	}
	return PCM_STARTED;
}

__attribute__((visibility("default"))) int PCM_Comm_rank(MPI_Comm comm, int *rank)
{
	return MPI_Comm_rank(comm, rank);
}

__attribute__((visibility("default"))) int PCM_Status(MPI_Comm)
{
	Reconfigurator &reconfigurator = Reconfigurator::get();
	switch (reconfigurator.decide()) {
	case Outcome::None:
		return PCM_NONE;
	case Outcome::Failed:
		gError = reconfigurator.error();
		return PCM_FAILED;
	case Outcome::Agreed:
		break;
	}
	switch (reconfigurator.plan().op) {
	case Operation::Split:
		return PCM_SPLIT;
	case Operation::Merge:
		return PCM_MERGE;
	case Operation::Migrate:
		return reconfigurator.leaving() ? PCM_MIGRATE : PCM_RECONFIGURE;
	case Operation::None:
		break;
	}
	return PCM_NONE;
}

__attribute__((visibility("default"))) int PCM_Store(int, const char *key, const void *data, int type, int count)
{
	if (!key || count < 0 || (count > 0 && !data) || !validType(type))
		return PCM_FAILURE;
	Blob blob;
	blob.type = baseType(type);
	blob.count = count;
	const auto *bytes = static_cast<const unsigned char *>(data);
	blob.bytes.assign(bytes, bytes + static_cast<std::size_t>(count) * malleo::pcm::baseSize(blob.type));
	gStore[key] = std::move(blob);
	if (std::strcmp(key, PCM_KEY_DATA) == 0)
		gJoinedColumns.reset();
	return PCM_SUCCESS;
}

__attribute__((visibility("default"))) int PCM_Load(int, const char *key, void *data)
{
	if (key && gJoinedColumns && std::strcmp(key, PCM_KEY_DATA) == 0) {
		if (!data)
			return PCM_FAILURE;
		// By their pages where the program's buffer lies as the reconfigurator's block does: then neither is the block's
		// content copied nor do the buffer's fresh pages need a first touch. A shared block (the default) hands its
		// pages to a buffer from PCM_Alloc; a private one (LikeMalloc) moves them to a malloced buffer.
		if (malleo::pcm::insideShared(gJoinedColumns.get(), gJoinedColumnsSize))
			malleo::pcm::moveShared(data, gJoinedColumns.get(), gJoinedColumnsSize);
		else
			malleo::pcm::moveOrCopy(data, gJoinedColumns.get(), gJoinedColumnsSize);
		gJoinedColumns.reset();
		return PCM_SUCCESS;
	}
	const auto found = key ? gStore.find(key) : gStore.end();
	if (found == gStore.end() || (!data && !found->second.bytes.empty()))
		return PCM_FAILURE;
	std::memcpy(data, found->second.bytes.data(), found->second.bytes.size());
	return PCM_SUCCESS;
}

__attribute__((visibility("default"))) void *PCM_Alloc(size_t bytes)
{
	if (malleo::pcm::sharesPages() && bytes > malleo::pcm::kPageMoveMin)
		if (void *block = malleo::pcm::allocateShared(bytes))
			return block;
	return std::calloc(1, bytes);
}

__attribute__((visibility("default"))) void *PCM_Realloc(void *block, size_t bytes)
{
	if (!block)
		return PCM_Alloc(bytes);
	const std::size_t had = malleo::pcm::sharedBytes(block);
	if (!had)
		return std::realloc(block, bytes);  // private memory stays private
	void *grown = PCM_Alloc(bytes);
	if (!grown)
		return nullptr;
	malleo::pcm::moveShared(grown, block, std::min(bytes, had));  // copied if `grown` is private memory
	PCM_Free(block);
	return grown;
}

__attribute__((visibility("default"))) void PCM_Free(void *block)
{
	malleo::pcm::releaseElements(block);
}

__attribute__((visibility("default"))) int PCM_Reconfigure(MPI_Comm *comm, const char *)
{
	Reconfigurator &reconfigurator = Reconfigurator::get();
	if (reconfigurator.plan().op != Operation::Migrate)
		return PCM_FAILURE;
	const bool leaving = reconfigurator.leaving();
	std::vector<BufferMove> none;
	if (!reconfigurator.reconfigure(none, {}, leaving ? gStore : Store{})) {
		gError = reconfigurator.error();
		return PCM_FAILURE;
	}
	if (leaving)
		leave(reconfigurator);
	updateWorld(reconfigurator, nullptr, nullptr, comm);
	return PCM_SUCCESS;
}

__attribute__((visibility("default"))) int PCM_Split(void *data, int type, int *iterations, int *xDim, int *yDim,
						     int *rank, int *totalProcessors, MPI_Comm *comm, const char *)
{
	return split(data, type, iterations, xDim, yDim, rank, totalProcessors, comm);
}

// M to N and 1 to N differ in who decides N, which is the middleware here: both run the agreed plan.
__attribute__((visibility("default"))) int PCM_Split_Collective(void *data, int type, int *iterations, int *xDim,
								int *yDim, int *rank, int *totalProcessors,
								MPI_Comm *comm, const char *)
{
	return split(data, type, iterations, xDim, yDim, rank, totalProcessors, comm);
}

__attribute__((visibility("default"))) int PCM_Merge_datacnts(int xDim, int yDim, int *mergecnts, int *merge_rank,
							      MPI_Comm)
{
	Reconfigurator &reconfigurator = Reconfigurator::get();
	if (reconfigurator.plan().op != Operation::Merge)
		return PCM_FAILURE;
	const std::int64_t after = reconfigurator.countAfter(xDim);
	const bool leaving = reconfigurator.leaving();
	*mergecnts = leaving ? 0 : static_cast<int>((after + 2) * yDim);
	*merge_rank = leaving ? -1 : reconfigurator.rank();
	return PCM_SUCCESS;
}

__attribute__((visibility("default"))) int PCM_Merge(void *data, int type, int *xDim, int *yDim, void *new_buffer,
						     int mergecnts, int *rank, int *totalProcessors, MPI_Comm *comm)
{
	return merge(data, type, xDim, yDim, new_buffer, mergecnts, rank, totalProcessors, comm);
}

__attribute__((visibility("default"))) int PCM_Merge_Collective(void *data, int type, int *xDim, int *yDim,
								void *new_buffer, int mergecnts, int *rank,
								int *totalProcessors, MPI_Comm *comm)
{
	return merge(data, type, xDim, yDim, new_buffer, mergecnts, rank, totalProcessors, comm);
}

__attribute__((visibility("default"))) int PCM_Finalize(MPI_Comm)
{
	Reconfigurator::get().finish();
	return PCM_SUCCESS;
}

__attribute__((visibility("default"))) int PCM_Exit(void)
{
	Reconfigurator &reconfigurator = Reconfigurator::get();
	if (reconfigurator.comm() != MPI_COMM_NULL)
		return PCM_FAILURE;
	leave(reconfigurator);
}

__attribute__((visibility("default"))) int PCM_Remaining_iterations(long long remaining)
{
	if (remaining < 0)
		return PCM_FAILURE;
	Reconfigurator::get().setRemainingIterations(remaining);
	return PCM_SUCCESS;
}

__attribute__((visibility("default"))) const char *PCM_Error_string(void)
{
	return gError.c_str();
}

} // extern "C"
