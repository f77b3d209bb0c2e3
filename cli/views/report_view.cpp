// SPDX-License-Identifier: Apache-2.0
// `malleo report FILE|DIR...`: saved libmalleo_pmpi reports (schema malleo.pmpi.profile/1,
// docs/pmpi-profiler.md) as tables. Fields are read without trusting their shape,
// so a report of another version shows "-" where it differs.
#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "views.h"
#include "failure.h"
#include "human_units.h"
#include "reply_fields.h"
#include "text_table.h"

namespace malleo::cli {

namespace {

namespace fs = std::filesystem;

constexpr std::size_t kMatrixRanks = 16; // wider matrices do not fit a terminal

bool isInit(const std::string &function)
{
	return function == "MPI_Init" || function == "MPI_Init_thread";
}

// A report that times MPI_Init apart (app_mpi_time_s) gets its shares of the time in MPI between MPI_Init and
// MPI_Finalize, without MPI_Init, which would dwarf the rest; an older report its shares of all the time in MPI.
void printFunctions(const nlohmann::json &report)
{
	const nlohmann::json *functions = field(report, {"functions"});
	if (!functions || !functions->is_object())
		return;
	const std::optional<double> appMpi = number(report, {"totals", "app_mpi_time_s"});
	const double mpi = appMpi.value_or(number(report, {"totals", "mpi_time_s"}).value_or(0));
	std::vector<std::pair<std::string, const nlohmann::json *>> rows;
	for (const auto &[name, f] : functions->items())
		if (!appMpi || !isInit(name))
			rows.emplace_back(name, &f);
	std::sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) {
		return number(*a.second, {"time_s"}).value_or(0) > number(*b.second, {"time_s"}).value_or(0);
	});
	TextTable table({"FUNCTION", "CALLS", "TIME_S", "%MPI", "BYTES"});
	for (std::size_t c : {1, 2, 3, 4})
		table.alignRight(c);
	for (const auto &[name, f] : rows) {
		const double t = number(*f, {"time_s"}).value_or(0);
		table.addRow({name, text(*f, {"calls"}), fixed(*f, {"time_s"}, 6),
			      mpi > 0 ? fmt::format("{:.1f}", 100 * t / mpi) : "-",
			      formatBytes(number(*f, {"bytes"}).value_or(0))});
	}
	std::cout << (appMpi ? "\nTime in MPI by function (all ranks, between MPI_Init and MPI_Finalize)\n"
			     : "\nTime in MPI by function (all ranks)\n")
		  << table.render();
}

// mpiP's per-task times: MPI_Init, the time between MPI_Init and MPI_Finalize, the time in MPI within it.
void printRanks(const nlohmann::json &ranks)
{
	TextTable table({"RANK", "HOST", "INIT_S", "APP_S", "MPI_S", "%MPI"});
	for (std::size_t c : {0, 2, 3, 4, 5})
		table.alignRight(c);
	for (const nlohmann::json &rank : ranks) {
		const std::optional<double> app = number(rank, {"app_time_s"});
		const std::optional<double> mpi = number(rank, {"app_mpi_time_s"});
		table.addRow({text(rank, {"rank"}), text(rank, {"host"}), fixed(rank, {"init_time_s"}, 6),
			      fixed(rank, {"app_time_s"}, 6), fixed(rank, {"app_mpi_time_s"}, 6),
			      app && mpi && *app > 0 ? fmt::format("{:.1f}", 100 * *mpi / *app) : "-"});
	}
	if (!table.empty())
		std::cout << "\nTime per rank (APP: between MPI_Init and MPI_Finalize; MPI: in MPI then)\n" << table.render();
}

void printCollectives(const nlohmann::json &report)
{
	const nlohmann::json *collectives = field(report, {"collectives"});
	if (!collectives || !collectives->is_object() || collectives->empty())
		return;
	TextTable table({"COLLECTIVE", "CALLS", "TIME_S", "BYTES"});
	for (std::size_t c : {1, 2, 3})
		table.alignRight(c);
	for (const auto &[kind, c] : collectives->items())
		table.addRow({kind, text(c, {"calls"}), fixed(c, {"time_s"}, 6),
			      formatBytes(number(c, {"bytes"}).value_or(0))});
	std::cout << "\nCollectives by kind (all ranks)\n" << table.render();
}

// The log2 bins of every rank summed, one column per kind of operation.
void printSizes(const nlohmann::json &ranks)
{
	const char *kinds[] = {"p2p", "coll", "rma"};
	std::vector<std::array<double, 3>> counts(65, {0, 0, 0});
	bool any = false;
	for (const nlohmann::json &rank : ranks)
		for (int k = 0; k < 3; ++k) {
			const nlohmann::json *bins = field(rank, {"size_histograms", kinds[k]});
			for (std::size_t i = 0; bins && bins->is_array() && i < bins->size(); ++i) {
				const auto bin = number((*bins)[i], {"bin"});
				if (bin && *bin >= 0 && *bin < 65) {
					counts[std::size_t(*bin)][std::size_t(k)] +=
					    number((*bins)[i], {"count"}).value_or(0);
					any = true;
				}
			}
		}
	if (!any)
		return;
	TextTable table({"SIZE", "P2P", "COLL", "RMA"});
	for (std::size_t c : {1, 2, 3})
		table.alignRight(c);
	for (std::size_t b = 0; b < counts.size(); ++b) {
		if (counts[b][0] + counts[b][1] + counts[b][2] == 0)
			continue;
		const double low = b ? double(uint64_t(1) << (b - 1)) : 0;
		const double high = b ? 2 * low - 1 : 0;
		table.addRow({b ? fmt::format("{} .. {}", formatBytes(low), formatBytes(high)) : "0 B",
			      fmt::format("{:.0f}", counts[b][0]), fmt::format("{:.0f}", counts[b][1]),
			      fmt::format("{:.0f}", counts[b][2])});
	}
	std::cout << "\nMessage sizes (operations per size, all ranks)\n" << table.render();
}

void printMatrix(const nlohmann::json &report)
{
	const nlohmann::json *matrix = field(report, {"matrix_bytes"});
	if (!matrix || !matrix->is_array()) {
		std::cout << "\nNo rank x rank matrix (only in a complete report with MALLEO_PROFILE=full)\n";
		return;
	}
	std::cout << "\nPoint-to-point bytes sent, row = sender, column = receiver (world ranks)\n";
	if (matrix->size() > kMatrixRanks) {
		std::cout << fmt::format("({} ranks: see matrix_bytes with --json)\n", matrix->size());
		return;
	}
	std::vector<std::string> header = {"FROM\\TO"};
	for (std::size_t j = 0; j < matrix->size(); ++j)
		header.push_back(std::to_string(j));
	TextTable table(header);
	for (std::size_t c = 0; c < header.size(); ++c)
		table.alignRight(c);
	for (std::size_t i = 0; i < matrix->size(); ++i) {
		std::vector<std::string> row = {std::to_string(i)};
		const nlohmann::json &line = (*matrix)[i];
		for (std::size_t j = 0; j < matrix->size(); ++j)
			row.push_back(line.is_array() && j < line.size() && line[j].is_number()
					  ? formatBytes(line[j].get<double>())
					  : "-");
		table.addRow(row);
	}
	std::cout << table.render();
}

void printIterations(const nlohmann::json &ranks)
{
	TextTable table({"RANK", "ITERATIONS", "MIN_S", "MEDIAN_S", "MAX_S", "%MPI"});
	for (std::size_t c : {0, 1, 2, 3, 4, 5})
		table.alignRight(c);
	std::vector<std::string> unmarked;
	for (const nlohmann::json &rank : ranks) {
		const nlohmann::json *times = field(rank, {"iterations", "time_s"});
		const nlohmann::json *mpi = field(rank, {"iterations", "mpi_time_s"});
		std::vector<double> t;
		double inMpi = 0;
		for (std::size_t i = 0; times && times->is_array() && i < times->size(); ++i) {
			t.push_back((*times)[i].is_number() ? (*times)[i].get<double>() : 0);
			if (mpi && mpi->is_array() && i < mpi->size() && (*mpi)[i].is_number())
				inMpi += (*mpi)[i].get<double>();
		}
		if (t.empty()) {
			unmarked.push_back(text(rank, {"rank"}));
			continue;
		}
		double total = 0;
		for (double x : t)
			total += x;
		std::sort(t.begin(), t.end());
		table.addRow({text(rank, {"rank"}), std::to_string(t.size()), fmt::format("{:.6f}", t.front()),
			      fmt::format("{:.6f}", t[t.size() / 2]), fmt::format("{:.6f}", t.back()),
			      total > 0 ? fmt::format("{:.1f}", 100 * inMpi / total) : "-"});
	}
	std::cout << "\nIteration times\n";
	if (!table.empty())
		std::cout << table.render();
	if (!unmarked.empty())
		std::cout << fmt::format("no iteration markers on rank(s) {}\n", fmt::join(unmarked, ", "));
}

// A directory stands for its newest report: the one a user just ran is the one they mean.
std::optional<fs::path> newestReport(const fs::path &dir, Failure &failure)
{
	std::optional<fs::path> newest;
	fs::file_time_type newestTime;
	std::error_code ec;
	for (const fs::directory_entry &e : fs::directory_iterator(dir, ec)) {
		const std::string name = e.path().filename().string();
		if (!name.starts_with("malleo-profile-") || !name.ends_with(".json") || !e.is_regular_file(ec))
			continue;
		const fs::file_time_type t = e.last_write_time(ec);
		if (!ec && (!newest || t > newestTime || (t == newestTime && e.path() > *newest))) {
			newest = e.path();
			newestTime = t;
		}
	}
	if (ec)
		failure = {kExitBadInput, fmt::format("{}: cannot list the directory: {}", dir.string(), ec.message())};
	else if (!newest)
		failure = {kExitBadInput,
			   fmt::format("{}: no report in this directory (malleo-profile-*.json)", dir.string())};
	return newest;
}

std::optional<nlohmann::json> readReport(const std::string &file, Failure &failure)
{
	// An ifstream opens a directory and throws at the first read: refuse it before.
	std::error_code ec;
	if (!fs::is_regular_file(file, ec)) {
		failure = {kExitBadInput, fmt::format("{}: {}", file, fs::exists(file, ec) ? "not a regular file"
										 : "no such file")};
		return std::nullopt;
	}
	std::ifstream in(file);
	if (!in) {
		failure = {kExitBadInput, fmt::format("{}: cannot read the report", file)};
		return std::nullopt;
	}
	nlohmann::json r = nlohmann::json::parse(in, nullptr, false);
	if (r.is_discarded() || !r.is_object()) {
		failure = {kExitBadInput, fmt::format("{}: not a JSON report", file)};
		return std::nullopt;
	}
	const std::string schema = text(r, {"schema"});
	if (!schema.starts_with("malleo.pmpi.profile/")) {
		failure = {kExitBadInput, fmt::format("{}: schema {} is not a malleo PMPI profile", file, schema)};
		return std::nullopt;
	}
	return r;
}

void printReport(const nlohmann::json &r)
{
	const nlohmann::json *ranksField = field(r, {"ranks"});
	const nlohmann::json ranks = ranksField && ranksField->is_array() ? *ranksField : nlohmann::json::array();
	std::cout << fmt::format("{}  job {}  {} of {} ranks  mode {}  ended by {}{}\n", text(r, {"app"}),
				 text(r, {"job"}), ranks.size(), text(r, {"world_size"}), text(r, {"mode"}),
				 text(r, {"ended"}),
				 r.value("complete", false) ? "" : "  (partial report)");
	std::cout << fmt::format("MPI library: {}\n", text(r, {"mpi_library"}));
	std::cout << fmt::format("wall time {} s (slowest rank), time in MPI {} s (summed over ranks)\n",
				 fixed(r, {"totals", "wall_time_s"}, 3), fixed(r, {"totals", "mpi_time_s"}, 3));
	if (field(r, {"totals", "app_mpi_time_s"})) {
		std::cout << fmt::format("MPI_Init {} s (slowest rank); MPI_Finalize not timed (the report is written "
					 "inside it)\n",
					 fixed(r, {"totals", "init_time_s"}, 3));
		std::cout << fmt::format("between MPI_Init and MPI_Finalize {} s (slowest rank), time in MPI {} s "
					 "(summed over ranks) = {} % of rank time\n",
					 fixed(r, {"totals", "app_time_s"}, 3), fixed(r, {"totals", "app_mpi_time_s"}, 3),
					 fixed(r, {"totals", "app_mpi_percent"}, 1));
	}
	printRanks(ranks);
	printFunctions(r);
	printCollectives(r);
	printSizes(ranks);
	printMatrix(r);
	printIterations(ranks);
}

} // namespace

// Each argument in its order: a file is a report, a directory its newest report. Several reports are printed one
// after the other, each under a `==> FILE <==` line as `tail` does (--json: an array of {"file", "report"}); one
// that cannot be read is one line on stderr, the others are still printed, and the status is then 2.
int reportCommand(const std::vector<std::string> &paths, bool json)
{
	int status = kExitOk;
	std::vector<std::pair<std::string, nlohmann::json>> reports;
	for (const std::string &path : paths) {
		Failure failure;
		std::string file = path;
		std::error_code ec;
		if (fs::is_directory(path, ec)) {
			const std::optional<fs::path> newest = newestReport(path, failure);
			if (!newest) {
				status = report(failure);
				continue;
			}
			file = newest->string();
		}
		if (std::optional<nlohmann::json> r = readReport(file, failure))
			reports.emplace_back(file, std::move(*r));
		else
			status = report(failure);
	}
	const auto dump = [](const nlohmann::json &j) {
		return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
	};
	if (json && paths.size() == 1 && reports.size() == 1) {
		std::cout << dump(reports.front().second) << '\n';
	} else if (json && !reports.empty()) {
		nlohmann::json all = nlohmann::json::array();
		for (const auto &[file, r] : reports)
			all.push_back({{"file", file}, {"report", r}});
		std::cout << dump(all) << '\n';
	} else if (!json) {
		for (std::size_t i = 0; i < reports.size(); ++i) {
			if (paths.size() > 1 || reports[i].first != paths.front())
				std::cout << (i ? "\n" : "") << "==> " << reports[i].first << " <==\n";
			printReport(reports[i].second);
		}
	}
	return status;
}

} // namespace malleo::cli
