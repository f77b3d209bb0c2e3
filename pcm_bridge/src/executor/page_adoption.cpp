// SPDX-License-Identifier: Apache-2.0
#include "executor/page_adoption.h"
#include "executor/host.h"

#include <algorithm>
#include <vector>

#include <unistd.h>

namespace malleo::pcm {

namespace {

// Pieces a rank describes of its old elements at most; a block cut into more offers nothing, and what it sends is
// copied into the receivers' own pages, which are whole again.
constexpr std::size_t kMostPieces = 32;
constexpr int kPieceWords = 6;
// host, pid, the old and new elements' addresses, whether the new elements can take pages, pieces offered (-1:
// none), then the pieces.
constexpr int kHeadWords = 6;
constexpr int kOfferWords = kHeadWords + static_cast<int>(kMostPieces) * kPieceWords;

struct Offer {
	std::int64_t host = 0, pid = 0, old_address = 0, new_address = 0, accepts = 0;
	std::vector<FilePiece> pieces;
	bool offers = false;
};

std::vector<std::int64_t> encode(const Offer& offer)
{
	std::vector<std::int64_t> words(kOfferWords, 0);
	words[0] = offer.host;
	words[1] = offer.pid;
	words[2] = offer.old_address;
	words[3] = offer.new_address;
	words[4] = offer.accepts;
	words[5] = offer.offers ? static_cast<std::int64_t>(offer.pieces.size()) : -1;
	std::size_t at = kHeadWords;
	for (const FilePiece& piece : offer.pieces)
		for (std::int64_t word : {piece.offset, piece.length, piece.fd, piece.fileOffset, piece.device, piece.inode})
			words[at++] = word;
	return words;
}

Offer decode(const std::int64_t* words)
{
	Offer offer;
	offer.host = words[0];
	offer.pid = words[1];
	offer.old_address = words[2];
	offer.new_address = words[3];
	offer.accepts = words[4];
	offer.offers = words[5] >= 0;
	for (std::int64_t i = 0; i < std::min<std::int64_t>(words[5], kMostPieces); ++i) {
		const std::int64_t* p = words + kHeadWords + i * kPieceWords;
		offer.pieces.push_back({p[0], p[1], p[2], p[3], p[4], p[5]});
	}
	return offer;
}

// The sender's pieces behind its old bytes [start, start + length), cut to that range; `offset` of each counted
// from `start`.
std::vector<FilePiece> piecesOf(const Offer& sender, std::int64_t start, std::int64_t length)
{
	std::vector<FilePiece> result;
	for (const FilePiece& piece : sender.pieces) {
		const std::int64_t from = std::max(piece.offset, start);
		const std::int64_t to = std::min(piece.offset + piece.length, start + length);
		if (from >= to)
			continue;
		FilePiece cut = piece;
		cut.offset = from - start;
		cut.length = to - from;
		cut.fileOffset = piece.fileOffset + (from - piece.offset);
		result.push_back(cut);
	}
	return result;
}

// A run of `count` elements of `bytes` each from the sender's address `from` to the receiver's `to`: the whole
// pages inside it, [pages_from, pages_to) in bytes from the run's start, can be taken over when both ends sit at
// the same offset within a page; elements [0, head) and [tail, count) reach outside them and are copied (writing,
// where an element straddles a page taken over, the same bytes that page already holds).
struct Run {
	std::int64_t pages_from = 0, pages_to = 0, head = 0, tail = 0;
};

Run splitRun(std::int64_t from, std::int64_t to, std::int64_t count, std::int64_t bytes, std::int64_t page)
{
	Run run{0, 0, count, count};
	const std::int64_t length = count * bytes;
	if ((from - to) % page != 0)
		return run;
	const std::int64_t first = (page - from % page) % page;  // bytes to the run's first whole page
	const std::int64_t last = (from + length) / page * page - from;
	if (first >= last)
		return run;
	run.pages_from = first;
	run.pages_to = last;
	run.head = (first + bytes - 1) / bytes;
	run.tail = std::max(run.head, last / bytes);
	return run;
}

// Collective: every process's offer, in rank order.
int gatherOffers(MPI_Comm comm, const Offer& mine, std::vector<Offer>& offers)
{
	int size = 0;
	MPI_Comm_size(comm, &size);
	std::vector<std::int64_t> words(static_cast<std::size_t>(size) * kOfferWords);
	const int rc =
	    MPI_Allgather(encode(mine).data(), kOfferWords, MPI_INT64_T, words.data(), kOfferWords, MPI_INT64_T, comm);
	if (rc != MPI_SUCCESS)
		return rc;
	for (int r = 0; r < size; ++r)
		offers.push_back(decode(words.data() + static_cast<std::size_t>(r) * kOfferWords));
	return MPI_SUCCESS;
}

// Collective: for each transfer of the schedule, whether its receiver takes its pages over (1). The receiver says;
// one reduction tells the senders.
int agreeTakes(MPI_Comm comm, int rank, const Schedule& schedule, const Offer& mine,
	       const std::vector<Offer>& offers, TakenPages& taken, std::vector<int>& takes)
{
	takes.assign(schedule.transfers.size(), 0);
	for (std::size_t i = 0; i < schedule.transfers.size(); ++i) {
		const Transfer& transfer = schedule.transfers[i];
		const Offer& sender = offers[static_cast<std::size_t>(transfer.from)];
		if (transfer.to != rank || !mine.accepts || !sender.offers || sender.host != mine.host)
			continue;
		takes[i] = std::all_of(sender.pieces.begin(), sender.pieces.end(), [&](const FilePiece& piece) {
			return taken.canOpen(static_cast<pid_t>(sender.pid), piece);
		});
	}
	return MPI_Allreduce(MPI_IN_PLACE, takes.data(), static_cast<int>(takes.size()), MPI_INT, MPI_MAX, comm);
}

} // namespace

int takePages(MPI_Comm comm, int rank, const Schedule& schedule, const void* old_elements, std::int64_t old_count,
	      void* new_elements, std::int64_t new_count, std::size_t element_bytes, TakenPages& taken, Schedule& rest)
{
	rest = schedule;
	const auto page = static_cast<std::int64_t>(sysconf(_SC_PAGESIZE));
	const auto eb = static_cast<std::int64_t>(element_bytes);
	Offer mine;
	mine.host = hostKey();
	mine.pid = getpid();
	mine.old_address = reinterpret_cast<std::intptr_t>(old_elements);
	mine.new_address = reinterpret_cast<std::intptr_t>(new_elements);
	mine.accepts = eb > 0 && new_count > 0 && insideShared(new_elements, static_cast<std::size_t>(new_count * eb));
	mine.offers = eb > 0 && old_count > 0 &&
		      describeShared(old_elements, static_cast<std::size_t>(old_count * eb), kMostPieces, mine.pieces);

	std::vector<Offer> offers;
	int rc = gatherOffers(comm, mine, offers);
	if (rc != MPI_SUCCESS)
		return rc;
	std::vector<int> takes;
	rc = agreeTakes(comm, rank, schedule, mine, offers, taken, takes);
	if (rc != MPI_SUCCESS)
		return rc;

	int status = MPI_SUCCESS;
	rest.transfers.clear();
	for (std::size_t i = 0; i < schedule.transfers.size(); ++i) {
		const Transfer& transfer = schedule.transfers[i];
		if (!takes[i]) {
			rest.transfers.push_back(transfer);
			continue;
		}
		const Offer& sender = offers[static_cast<std::size_t>(transfer.from)];
		const Offer& receiver = offers[static_cast<std::size_t>(transfer.to)];
		Transfer copied = transfer;  // what reaches outside the pages taken over
		copied.source.clear();
		copied.destination.clear();
		const auto copy = [&](std::int64_t source, std::int64_t destination, std::int64_t count) {
			if (count > 0) {
				copied.source.push_back({source, count});
				copied.destination.push_back({destination, count});
			}
		};
		forEachChunk(transfer, [&](std::int64_t source, std::int64_t destination, std::int64_t count) {
			const std::int64_t from = sender.old_address + source * eb, to = receiver.new_address + destination * eb;
			if (transfer.from == transfer.to && from == to) {
				copy(source, destination, count);  // kept in place: the executor leaves it where it is
				return;
			}
			const Run run = splitRun(from, to, count, eb, page);
			copy(source, destination, run.head);
			copy(source + run.tail, destination + run.tail, count - run.tail);
			if (run.pages_from == run.pages_to)
				return;
			const std::int64_t start = source * eb + run.pages_from, length = run.pages_to - run.pages_from;
			if (transfer.to == rank)
				for (const FilePiece& piece : piecesOf(sender, start, length)) {
					auto* at = static_cast<char*>(new_elements) + destination * eb + run.pages_from +
						   piece.offset;
					if (taken.take(at, static_cast<pid_t>(sender.pid), piece) != 0)
						status = MPI_ERR_OTHER;
				}
			if (transfer.from == rank)
				taken.giveAway(static_cast<const char*>(old_elements) + start, static_cast<std::size_t>(length));
		});
		if (!copied.source.empty())
			rest.transfers.push_back(std::move(copied));
	}
	return status;
}

}  // namespace malleo::pcm
