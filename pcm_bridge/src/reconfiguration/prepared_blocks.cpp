// SPDX-License-Identifier: Apache-2.0
#include "reconfiguration/prepared_blocks.h"

#include <cstdint>

#include "memory/page_move.h"
#include "reconfiguration/manifest.h"
#include "reconfiguration/tags.h"

namespace malleo::pcm {

void PreparedBlocks::prepare(MPI_Comm control)
{
	MPI_Status status;
	std::int64_t size = 0;
	MPI_Recv(&size, 1, MPI_INT64_T, MPI_ANY_SOURCE, kTagSpawnPrepare, control, &status);
	std::vector<unsigned char> manifest(static_cast<std::size_t>(size));
	MPI_Recv(manifest.data(), static_cast<int>(size), MPI_BYTE, status.MPI_SOURCE, kTagSpawnPrepare, control,
		 MPI_STATUS_IGNORE);
	std::vector<BufferSpec> specs;
	Store ignored;
	if (size > 0 && !decodeManifest(manifest, specs, ignored))
		specs.clear();
	int sent = 0;
	MPI_Probe(status.MPI_SOURCE, kTagSpawnPrepare, control, &status);
	MPI_Get_count(&status, MPI_INT64_T, &sent);
	std::vector<std::int64_t> counts(static_cast<std::size_t>(sent), 0);
	MPI_Recv(counts.data(), sent, MPI_INT64_T, status.MPI_SOURCE, kTagSpawnPrepare, control, MPI_STATUS_IGNORE);
	if (counts.size() != specs.size())
		specs.clear();
	for (std::size_t b = 0; b < specs.size(); ++b) {
		BufferMove block;
		block.spec = specs[b];
		block.newCount = counts[b];
		const std::int64_t bytes = block.elementBytes();
		// A shared block is placed by its first element's global index, which only the operation knows, and
		// takes most of its pages from the processes on its host instead of faulting them in.
		if (block.newCount > 0 && !sharesPages())
			block.newData = allocateElements(block.newCount, block.spec.halo, bytes, false);
		if (!block.newData)
			continue;
		block.allocated = true;
		// Faulted in now, while the application computes, instead of inside the operation's copies.
		populatePages(block.newData, static_cast<std::size_t>((block.newCount + 2 * block.spec.halo) * bytes));
		blocks_.push_back(block);
	}
	const std::int64_t ready = 1;
	MPI_Send(&ready, 1, MPI_INT64_T, status.MPI_SOURCE, kTagSpawnPrepare, control);
}

void *PreparedBlocks::take(const BufferMove &move)
{
	for (auto block = blocks_.begin(); block != blocks_.end(); ++block)
		if (block->spec.name == move.spec.name && block->newCount == move.newCount &&
		    block->spec.halo == move.spec.halo && block->elementBytes() == move.elementBytes()) {
			void *data = block->newData;
			blocks_.erase(block);
			return data;
		}
	return nullptr;
}

void PreparedBlocks::drop()
{
	for (auto &block : blocks_)
		releaseElements(block.newData);
	blocks_.clear();
}

} // namespace malleo::pcm
