// SPDX-License-Identifier: Apache-2.0
// The MALLEO_FORCE grammar, the injected faults and the planning of split, merge and migrate, without MPI.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <map>
#include <doctest/doctest.h>

#include <malleo/command.h>

#include "plan/faults.h"
#include "plan/nodes.h"
#include "plan/plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <unistd.h>

using namespace malleo;
using namespace malleo::pcm;

namespace {

Membership pool(int world, int active, std::vector<std::string> nodes = {})
{
	Membership m;
	for (int w = 0; w < world; ++w) {
		m.state.push_back(w < active ? ProcessState::Active : ProcessState::Spare);
		m.node.push_back(nodes.empty() ? "n0" : nodes[static_cast<std::size_t>(w)]);
		if (w < active)
			m.active.push_back(w);
	}
	return m;
}

} // namespace

TEST_CASE("the forced schedule grammar")
{
	std::map<std::int64_t, Command> commands;
	REQUIRE(parseForcedSchedule("merge@20,split@10:2,migrate@30:3/node1", commands).empty());
	REQUIRE(commands.size() == 3);
	CHECK(commands.begin()->first == 10);
	CHECK(commands[10].op == Operation::Split);
	CHECK(commands[10].count == 2);
	CHECK(commands[20].op == Operation::Merge);
	CHECK(commands[20].count == 1);
	CHECK(commands[30].op == Operation::Migrate);
	CHECK(commands[30].count == 3);
	CHECK(commands[30].node == "node1");

	CHECK(parseForcedSchedule("", commands).empty());
	CHECK(commands.empty());
	for (const char *bad : {"split", "split@", "split@x", "split@1:0", "split@1:-2", "grow@3", "split@1,,merge@2",
				"migrate@4:1/", "split@5,merge@5", "split@1:2x"}) {
		CAPTURE(bad);
		std::map<std::int64_t, Command> kept{{0, Command{}}};
		const auto error = parseForcedSchedule(bad, kept);
		CHECK(error.rfind("MALLEO_FORCE: ", 0) == 0);
		CHECK(error.find('\n') == std::string::npos);
		CHECK(kept.size() == 1);  // nothing half-parsed
	}
}

TEST_CASE("injected faults")
{
	Faults faults;
	REQUIRE(parseFaults("agree-timeout@5,refuse@7,redistribute@9", faults).empty());
	CHECK(faults.agreeTimeout.count(5));
	CHECK(faults.refuse.count(7));
	CHECK(faults.redistribute.count(9));
	REQUIRE(parseFaults("spawn@4,die@6", faults).empty());
	CHECK(faults.spawn.count(4));
	CHECK(faults.die.count(6));
	CHECK_FALSE(faults.die.count(4));
	CHECK_FALSE(parseFaults("crash@3", faults).empty());
	CHECK_FALSE(parseFaults("refuse@", faults).empty());
}

TEST_CASE("split puts spare processes after the ones whose blocks they share; merge keeps the first of each group, "
	  "or the first slots under the C API")
{
	auto m = pool(6, 2);
	Plan plan;
	REQUIRE(makePlan({Operation::Split, 3, "", "", {}}, 3, m, plan).empty());
	CHECK(plan.after == std::vector<int>{0, 2, 3, 1, 4});  // 3 joiners over 2 processes: 2 after the first
	CHECK(plan.joiners == std::vector<int>{2, 3, 4});
	CHECK(slotAfter(plan, 1) == 3);
	CHECK(slotAfter(plan, 5) == -1);  // a spare left parked has no slot
	applyPlan(plan, m);
	CHECK(m.state[4] == ProcessState::Active);

	auto reusable = m;
	reusable.reusable = true;
	REQUIRE(makePlan({Operation::Merge, 2, "", "", {}}, 2, reusable, plan).empty());
	CHECK(plan.after == std::vector<int>{0, 3, 4});  // groups of 2, 2 and 1 slots
	CHECK(plan.leavers == std::vector<int>{2, 1});
	REQUIRE(makePlan({Operation::Merge, 2, "", "", {}}, 2, m, plan).empty());
	CHECK(plan.after == std::vector<int>{0, 2, 3});  // the C API: every process that stays keeps its rank
	CHECK(plan.leavers == std::vector<int>{1, 4});
	REQUIRE(makePlan({Operation::Merge, 4, "", "", {}}, 4, m, plan).empty());
	CHECK(plan.after == std::vector<int>{0});
	CHECK(plan.leavers == std::vector<int>{2, 3, 1, 4});
	applyPlan(plan, m);
	CHECK(m.state[1] == ProcessState::Left);  // a process that left is never activated again

	CHECK(makePlan({Operation::Merge, 1, "", "", {}}, 5, m, plan) == "merge of 1: only 1 active process");
	CHECK(plan.op == Operation::None);
	CHECK(makePlan({Operation::Split, 2, "", "", {}}, 6, m, plan) == "split of 2: only 1 spare process");
	REQUIRE(makePlan({Operation::Split, 1, "", "", {}}, 7, m, plan).empty());
	CHECK(plan.joiners == std::vector<int>{5});
}

// With balanced blocks: the elements that change process under a plan (a process keeps what its old and new blocks
// share). Where one count divides the other, every process that stays keeps the start of its block and only the
// joiners' (split) or the leavers' (merge, C++ API) share moves; otherwise no more moves than with the joiners
// after the last slot and the last slots leaving.
std::int64_t movedElements(const std::vector<int> &before, const std::vector<int> &after, std::int64_t total,
			   bool *starts_kept)
{
	const auto old_counts = balancedCounts(total, static_cast<int>(before.size()));
	const auto new_counts = balancedCounts(total, static_cast<int>(after.size()));
	auto start = [](const std::vector<std::int64_t> &counts, std::size_t slot) {
		std::int64_t sum = 0;
		for (std::size_t q = 0; q < slot; ++q)
			sum += counts[q];
		return sum;
	};
	std::int64_t kept = 0;
	*starts_kept = true;
	for (std::size_t i = 0; i < before.size(); ++i) {
		const auto slot = std::find(after.begin(), after.end(), before[i]);
		if (slot == after.end())
			continue;
		const auto p = static_cast<std::size_t>(slot - after.begin());
		const std::int64_t old_start = start(old_counts, i), new_start = start(new_counts, p);
		*starts_kept = *starts_kept && old_start == new_start;
		kept += std::max<std::int64_t>(0, std::min(old_start + old_counts[i], new_start + new_counts[p]) -
							  std::max(old_start, new_start));
	}
	return total - kept;
}

TEST_CASE("splits and merges move only what the joiners take or the leavers give")
{
	const std::int64_t total = 5040;  // divisible by 1..10
	for (int from = 1; from <= 7; ++from)
		for (int to = 1; to <= 8; ++to) {
			if (to == from)
				continue;
			CAPTURE(from);
			CAPTURE(to);
			auto m = pool(8, from);
			m.reusable = true;  // the C++ API's merges (the C API keeps the first slots, above)
			Plan plan;
			const bool split = to > from;
			REQUIRE(makePlan({split ? Operation::Split : Operation::Merge, std::abs(to - from), "", "", {}}, 1, m, plan)
					.empty());
			REQUIRE(plan.after.size() == static_cast<std::size_t>(to));
			bool starts_kept = false, ignored = false;
			const std::int64_t moved = movedElements(plan.before, plan.after, total, &starts_kept);
			std::vector<int> appended = plan.before;
			appended.resize(static_cast<std::size_t>(std::min(from, to)));
			for (int w = from; w < to; ++w)
				appended.push_back(w);
			CHECK(moved <= movedElements(plan.before, appended, total, &ignored));
			const int smaller = std::min(from, to), larger = std::max(from, to);
			if (larger % smaller == 0) {
				CHECK(starts_kept);
				CHECK(moved == total / larger * (larger - smaller));
			}
		}
}

TEST_CASE("migration puts the replacement in the source's slot, on the named node")
{
	auto m = pool(6, 3, {"a", "a", "a", "a", "b", "b"});
	Plan plan;
	REQUIRE(makePlan({Operation::Migrate, 2, "b", "", {}}, 1, m, plan).empty());
	CHECK(plan.leavers == std::vector<int>{0, 1});
	CHECK(plan.joiners == std::vector<int>{4, 5});
	CHECK(plan.after == std::vector<int>{4, 5, 2});
	CHECK(participants(plan) == std::vector<int>{0, 1, 2, 4, 5});
	CHECK_FALSE(makePlan({Operation::Migrate, 3, "b", "", {}}, 1, m, plan).empty());
	CHECK_FALSE(makePlan({Operation::Migrate, 1, "c", "", {}}, 1, m, plan).empty());
}

TEST_CASE("plans survive the wire")
{
	auto m = pool(5, 2);
	Plan plan;
	REQUIRE(makePlan({Operation::Split, 2, "", "", {}}, 9, m, plan).empty());
	plan.epoch = 4;
	const auto words = encodePlan(plan, m);
	CHECK(words.size() == planWords(5));
	Plan back;
	Membership other = pool(5, 5);
	decodePlan(words, back, other);
	CHECK(back.op == Operation::Split);
	CHECK(back.iteration == 9);
	CHECK(back.epoch == 4);
	CHECK(back.after == plan.after);
	CHECK(back.joiners == plan.joiners);
	CHECK(other.state == m.state);
}

TEST_CASE("processes of a program that can re-enter are spare again after they leave, and chosen again")
{
	auto m = pool(3, 2);
	m.reusable = true;
	Plan plan;
	REQUIRE(makePlan({Operation::Split, 1, "", "", {}}, 2, m, plan).empty());
	applyPlan(plan, m);
	REQUIRE(makePlan({Operation::Merge, 2, "", "", {}}, 5, m, plan).empty());
	CHECK(plan.leavers == std::vector<int>{2, 1});  // slot order: the joiner followed process 0
	applyPlan(plan, m);
	CHECK(m.state == std::vector<ProcessState>{ProcessState::Active, ProcessState::Spare, ProcessState::Spare});
	CHECK(m.active == std::vector<int>{0});

	// Lowest world ranks first, placed as processes that never ran.
	REQUIRE(makePlan({Operation::Split, 1, "", "", {}}, 8, m, plan).empty());
	CHECK(plan.joiners == std::vector<int>{1});
	CHECK(plan.after == std::vector<int>{0, 1});
	applyPlan(plan, m);
	CHECK(m.state[1] == ProcessState::Active);
	CHECK(m.state[2] == ProcessState::Spare);

	// A migration's source becomes spare; the next migration may take it back into the slot of its own source.
	REQUIRE(makePlan({Operation::Migrate, 1, "", "", {}}, 9, m, plan).empty());
	CHECK(plan.leavers == std::vector<int>{0});
	CHECK(plan.joiners == std::vector<int>{2});
	CHECK(plan.after == std::vector<int>{2, 1});
	applyPlan(plan, m);
	CHECK(m.state[0] == ProcessState::Spare);
	REQUIRE(makePlan({Operation::Split, 1, "", "", {}}, 10, m, plan).empty());
	CHECK(plan.joiners == std::vector<int>{0});
	CHECK(plan.after == std::vector<int>{2, 0, 1});
	applyPlan(plan, m);
	CHECK(m.state == std::vector<ProcessState>(3, ProcessState::Active));
	CHECK_FALSE(makePlan({Operation::Split, 1, "", "", {}}, 11, m, plan).empty());  // all 3 are active now
}

TEST_CASE("a process that left is chosen again only on the migration's target node")
{
	auto m = pool(4, 2, {"a", "b", "a", "b"});
	m.reusable = true;
	Plan plan;
	REQUIRE(makePlan({Operation::Split, 2, "", "", {}}, 1, m, plan).empty());
	applyPlan(plan, m);
	REQUIRE(makePlan({Operation::Merge, 2, "", "", {}}, 2, m, plan).empty());
	applyPlan(plan, m);  // 2 (on a) and 3 (on b) have left
	REQUIRE(makePlan({Operation::Migrate, 1, "b", "", {}}, 3, m, plan).empty());
	CHECK(plan.leavers == std::vector<int>{0});
	CHECK(plan.joiners == std::vector<int>{3});
	CHECK(plan.after == std::vector<int>{3, 1});
	applyPlan(plan, m);
	REQUIRE(makePlan({Operation::Migrate, 1, "a", "", {}}, 4, m, plan).empty());
	CHECK(plan.leavers == std::vector<int>{3});
	CHECK(plan.joiners == std::vector<int>{0});  // 0 and 2 are spare on a: the lowest world rank
	CHECK(plan.after == std::vector<int>{0, 1});
	applyPlan(plan, m);
	CHECK_FALSE(makePlan({Operation::Migrate, 2, "a", "", {}}, 5, m, plan).empty());  // 1 is on b, one spare on a
}

TEST_CASE("processes of the PCM C API stay left: no plan chooses them")
{
	auto m = pool(3, 2);
	Plan plan;
	REQUIRE(makePlan({Operation::Merge, 1, "", "", {}}, 1, m, plan).empty());
	applyPlan(plan, m);
	CHECK(m.state[1] == ProcessState::Left);
	REQUIRE(makePlan({Operation::Split, 1, "", "", {}}, 2, m, plan).empty());
	CHECK(plan.joiners == std::vector<int>{2});
	applyPlan(plan, m);
	CHECK_FALSE(makePlan({Operation::Split, 1, "", "", {}}, 3, m, plan).empty());
	CHECK_FALSE(makePlan({Operation::Migrate, 1, "", "", {}}, 3, m, plan).empty());
}

TEST_CASE("the wire carries whether leavers are reused, and the states of reused processes")
{
	auto m = pool(4, 3);
	m.reusable = true;
	Plan plan;
	REQUIRE(makePlan({Operation::Merge, 2, "", "", {}}, 3, m, plan).empty());
	applyPlan(plan, m);
	REQUIRE(makePlan({Operation::Split, 2, "", "", {}}, 6, m, plan).empty());
	CHECK(plan.joiners == std::vector<int>{1, 2});
	const auto words = encodePlan(plan, m);
	CHECK(words.size() == planWords(4));
	// A parked process applies the plan it receives: it must make the leavers spare as the others do.
	Plan back;
	Membership parked = pool(4, 4);
	decodePlan(words, back, parked);
	CHECK(parked.reusable);
	CHECK(parked.state == m.state);
	CHECK(back.joiners == plan.joiners);
	applyPlan(back, parked);
	REQUIRE(makePlan({Operation::Merge, 2, "", "", {}}, 7, parked, back).empty());
	applyPlan(back, parked);
	CHECK(parked.state[1] == ProcessState::Spare);
	CHECK(parked.state[2] == ProcessState::Spare);

	Membership fixed = pool(4, 1);
	fixed.reusable = false;
	Membership other = pool(4, 4);
	other.reusable = true;
	decodePlan(encodePlan(plan, fixed), back, other);
	CHECK_FALSE(other.reusable);
}

TEST_CASE("balanced blocks never grow when processes are added")
{
	for (std::int64_t total = 1; total < 60; ++total)
		for (int m = 1; m < 12; ++m)
			for (int n = m + 1; n < 13; ++n) {
				const auto before = balancedCounts(total, m);
				const auto after = balancedCounts(total, n);
				for (int s = 0; s < m; ++s)
					CHECK(after[static_cast<std::size_t>(s)] <= before[static_cast<std::size_t>(s)]);
			}
}

TEST_CASE("nodes and weights in the forced schedule")
{
	std::map<std::int64_t, Command> commands;
	REQUIRE(parseForcedSchedule("split@3:2/n2/w=1,1,3,migrate@5:1/w=2,1,1/n1,merge@8:1/w=4,1", commands).empty());
	REQUIRE(commands.size() == 3);
	CHECK(commands[3].node == "n2");
	CHECK(commands[3].weights == std::vector<std::int64_t>{1, 1, 3});
	CHECK(commands[5].node == "n1");
	CHECK(commands[5].weights == std::vector<std::int64_t>{2, 1, 1});
	CHECK(commands[8].weights == std::vector<std::int64_t>{4, 1});
	for (const char *bad : {"split@1:2/w=", "split@1:2/w=1,0", "merge@1:1/n2", "split@1:2/a/b", "split@1:2/w=1/w=2",
				"split@1:2/w=1,x"}) {
		CAPTURE(bad);
		CHECK_FALSE(parseForcedSchedule(bad, commands).empty());
	}
}

TEST_CASE("weights must match the processes after the operation and persist through migrations")
{
	auto m = pool(6, 2, {"a", "a", "b", "b", "b", "b"});
	Plan plan;
	CHECK_FALSE(makePlan({Operation::Split, 2, "", "", {1, 2}}, 1, m, plan).empty());
	REQUIRE(makePlan({Operation::Split, 2, "b", "", {1, 1, 3, 1}}, 1, m, plan).empty());
	CHECK(plan.joiners == std::vector<int>{2, 3});
	applyPlan(plan, m);
	CHECK(m.weights == std::vector<std::int64_t>{1, 1, 3, 1});
	REQUIRE(makePlan({Operation::Migrate, 1, "b", "", {}}, 2, m, plan).empty());
	CHECK(plan.weights == std::vector<std::int64_t>{1, 1, 3, 1});
	REQUIRE(makePlan({Operation::Merge, 1, "", "", {}}, 3, m, plan).empty());
	CHECK(plan.weights.empty());
	const auto words = encodePlan(plan, m);
	Plan back;
	Membership other = m;
	REQUIRE(makePlan({Operation::Merge, 1, "", "", {5, 1, 1}}, 3, m, plan).empty());
	decodePlan(encodePlan(plan, m), back, other);
	CHECK(back.weights == std::vector<std::int64_t>{5, 1, 1});
	CHECK(words.size() == planWords(6));
}

TEST_CASE("shares proportional to weights: whole units, largest remainders, at least one each")
{
	CHECK(weightedCounts(30, {1, 1, 3}) == std::vector<std::int64_t>{6, 6, 18});
	CHECK(weightedCounts(10, {1, 1, 1}) == std::vector<std::int64_t>{4, 3, 3});   // remainder to the lower slot
	CHECK(weightedCounts(10, {2, 1}) == std::vector<std::int64_t>{7, 3});         // 6.67, 3.33
	CHECK(weightedCounts(5, {100, 1, 1}) == std::vector<std::int64_t>{3, 1, 1});  // 4.9, 0.05, 0.05 -> at least 1
	CHECK(weightedCounts(2, {1, 1, 1}) == std::vector<std::int64_t>{1, 1, 0});    // fewer units than slots
	CHECK(targetCounts(7, 2, {}) == balancedCounts(7, 2));
	for (std::int64_t total = 0; total < 40; ++total)
		for (const auto &weights : std::vector<std::vector<std::int64_t>>{{1}, {3, 1}, {1, 2, 3}, {7, 1, 1, 1}}) {
			const auto counts = weightedCounts(total, weights);
			std::int64_t sum = 0, weight_sum = 0;
			for (std::size_t i = 0; i < counts.size(); ++i) {
				sum += counts[i];
				weight_sum += weights[i];
				if (total >= static_cast<std::int64_t>(weights.size()))
					CHECK(counts[i] >= 1);
			}
			CHECK(sum == total);
			// Within one unit of the exact quota, except where the minimum of one moved a unit.
			for (std::size_t i = 0; i < counts.size(); ++i) {
				const double quota = static_cast<double>(total) * weights[i] / weight_sum;
				CHECK(std::abs(counts[i] - quota) < 2.0);
			}
		}
	// Products beyond 64 bits stay exact.
	const auto big = weightedCounts(4'000'000'000'000LL, {1'000'000, 3'000'000});
	CHECK(big == std::vector<std::int64_t>{1'000'000'000'000LL, 3'000'000'000'000LL});
}

TEST_CASE("node descriptions")
{
	std::vector<int> cpus;
	REQUIRE(parseCpuList("0-2,5,4", cpus).empty());
	CHECK(cpus == std::vector<int>{0, 1, 2, 4, 5});
	for (const char *bad : {"", "a", "3-1", "1,,2", "-1"}) {
		CAPTURE(bad);
		CHECK_FALSE(parseCpuList(bad, cpus).empty());
	}
	NodeMap map;
	REQUIRE(parseNodeMap("n1=0;n2=1", "n2=tcp://127.0.0.1:5555", "/tmp/c", map).empty());
	CHECK(map.described);
	CHECK(map.nodes.at("n1").cpus == std::vector<int>{0});
	CHECK(map.nodes.at("n1").agent == "ipc:///tmp/c/n1/agent.sock");
	CHECK(map.nodes.at("n2").agent == "tcp://127.0.0.1:5555");
	CHECK_FALSE(parseNodeMap("n1=0;n1=1", "", "", map).empty());
	CHECK_FALSE(parseNodeMap("n1", "", "", map).empty());
	CHECK_FALSE(parseNodeMap("n1=0", "n1=http://x", "", map).empty());
	REQUIRE(parseNodeMap("", "", "", map).empty());
	CHECK_FALSE(map.described);
}

TEST_CASE("nodes that joined the cluster after the launch: its cluster.json")
{
	const std::string cluster = R"({"nodes": [
		{"name": "n1", "cpus": [1], "pid": 1},
		{"name": "n2", "cpus": [0, 1], "pid": 2}]})";
	NodeMap map;
	REQUIRE(parseNodeMap("n1=0", "", "/tmp/c", map).empty());
	REQUIRE(addClusterNodes(cluster, map).empty());
	// The launch's description of n1 wins; n2 is new, with its CPUs and the agent in its run directory.
	CHECK(map.nodes.at("n1").cpus == std::vector<int>{0});
	CHECK(map.nodes.at("n2").cpus == std::vector<int>{0, 1});
	CHECK(map.nodes.at("n2").agent == "ipc:///tmp/c/n2/agent.sock");

	// Malformed: one line naming the file, the map unchanged.
	for (const char *bad : {"", "[]", R"({"nodes": 1})", R"({"nodes": [{"cpus": [0]}]})",
				R"({"nodes": [{"name": "n3", "cpus": ["a"]}]})", R"({"nodes": [{"name": "n3", "cpus": [-1]}]})"}) {
		CAPTURE(bad);
		NodeMap before = map;
		const std::string error = addClusterNodes(bad, map);
		CHECK(error.find("/tmp/c/cluster.json") == 0);
		CHECK(map.nodes.size() == before.nodes.size());
	}

	// A process launched outside the cluster (no MALLEO_NODES) or with no cluster directory is not placed on it.
	REQUIRE(parseNodeMap("", "", "/tmp/c", map).empty());
	REQUIRE(addClusterNodes(cluster, map).empty());
	CHECK(map.nodes.empty());
	REQUIRE(parseNodeMap("n1=0", "", "", map).empty());
	REQUIRE(addClusterNodes(cluster, map).empty());
	CHECK(map.nodes.size() == 1);
}

TEST_CASE("the nodes' hosts: MALLEO_NODE_HOSTS, MALLEO_HOSTS and cluster.json")
{
	NodeMap map;
	REQUIRE(parseNodeMap("n1=0;n2=1", "", "/tmp/c", map).empty());
	REQUIRE(parseNodeHosts("n1=mhab-n1", "mhab-n1,mhab-n2", map).empty());
	CHECK(map.nodes.at("n1").host == "mhab-n1");
	CHECK(map.nodes.at("n2").host.empty());
	CHECK(map.launchHosts == std::vector<std::string>{"mhab-n1", "mhab-n2"});
	// A node the environment gave no host takes the file's; one it gave keeps it; a new node brings its own.
	const std::string cluster = R"({"nodes": [
		{"name": "n1", "cpus": [0], "host": "other"},
		{"name": "n2", "cpus": [1], "host": "mhab-n2"},
		{"name": "n3", "cpus": [0], "host": "mhab-n3"}]})";
	REQUIRE(addClusterNodes(cluster, map).empty());
	CHECK(map.nodes.at("n1").host == "mhab-n1");
	CHECK(map.nodes.at("n2").host == "mhab-n2");
	CHECK(map.nodes.at("n3").host == "mhab-n3");

	for (const char *bad : {"n1", "n1=", "n1=a b", "n1=a/b"}) {
		CAPTURE(bad);
		NodeMap other;
		const std::string error = parseNodeHosts(bad, "", other);
		CHECK(error.find("MALLEO_NODE_HOSTS") == 0);
	}
}

TEST_CASE("cluster.json read from MALLEO_CLUSTER_DIR")
{
	char dir[] = "/tmp/malleo-plan-XXXXXX";
	REQUIRE(mkdtemp(dir) != nullptr);
	NodeMap map;
	REQUIRE(parseNodeMap("n1=0", "", dir, map).empty());
	CHECK(addClusterFileNodes(map).empty()); // no file yet: nothing added, nothing wrong
	CHECK(map.nodes.size() == 1);
	const std::string path = std::string(dir) + "/cluster.json";
	{
		std::ofstream out(path);
		out << R"({"nodes": [{"name": "n1", "cpus": [0]}, {"name": "n2", "cpus": [1]}]})";
	}
	CHECK(addClusterFileNodes(map).empty());
	CHECK(map.nodes.at("n2").cpus == std::vector<int>{1});
	CHECK(map.nodes.at("n2").agent == "ipc://" + std::string(dir) + "/n2/agent.sock");
	std::remove(path.c_str());
	rmdir(dir);
}

TEST_CASE("node weights: each node's weight shared among the processes the plan leaves on it")
{
	// Two processes on a and three on b, a merge of 1 on a (its two processes fold into one). Even shares would
	// give a's remaining process a quarter of the data and b three quarters; equal node weights keep half of it
	// on each node: a's process 1/2, each of b's 1/6.
	auto m = pool(6, 5, {"a", "a", "b", "b", "b", "c"});
	m.reusable = true; // the C++ API: any process may leave in a merge
	Plan plan;
	Command merge{Operation::Merge, 1, "", "a"};
	merge.nodeWeights = {{"a", 1000}, {"b", 1000}};
	REQUIRE(makePlan(merge, 0, m, plan).empty());
	CHECK(plan.after == std::vector<int>{0, 2, 3, 4});
	REQUIRE(plan.weights.size() == 4);
	CHECK(plan.weights[0] == 3 * plan.weights[1]);
	CHECK(plan.weights[1] == plan.weights[2]);
	const auto counts = targetCounts(1200, 4, plan.weights);
	CHECK(counts == std::vector<std::int64_t>{600, 200, 200, 200});

	// A split onto c, which the weights do not name: it gets the mean weight; a node twice as powerful gets
	// twice the data.
	Command split{Operation::Split, 1, "c"};
	split.nodeWeights = {{"a", 2000}, {"b", 1000}};
	REQUIRE(makePlan(split, 0, m, plan).empty());
	std::map<std::string, std::int64_t> perNode;
	for (std::size_t i = 0; i < plan.after.size(); ++i)
		perNode[m.node[static_cast<std::size_t>(plan.after[i])]] += targetCounts(9000, 6, plan.weights)[i];
	CHECK(perNode["a"] == 4000);
	CHECK(perNode["b"] == 2000);
	CHECK(perNode["c"] == 3000);
}

TEST_CASE("a refusal says its kind and the most the same operation could do")
{
	Refusal why;
	Plan plan;
	// World ranks 0 (n1) and 1 (n2) active, 2 (n1) and 3 (n2) spare.
	auto m = pool(4, 2, {"n1", "n2", "n1", "n2"});
	CHECK(makePlan({Operation::Split, 2, "n2", "", {}}, 1, m, plan, &why) == "split of 2: only 1 spare process on node 'n2'");
	CHECK(why.kind == "pool_exhausted");
	CHECK(why.most == 1);
	CHECK(makePlan({Operation::Split, 3, "", "", {}}, 1, m, plan, &why) == "split of 3: only 2 spare processes");
	CHECK(why.most == 2);
	CHECK(makePlan({Operation::Migrate, 2, "n1", "n2", {}}, 1, m, plan, &why).find("only 1 active") != std::string::npos);
	CHECK(why.kind == "too_few_active");
	CHECK(why.most == 1);
	CHECK(makePlan({Operation::Merge, 2, "", "", {}}, 1, m, plan, &why) == "merge of 2: only 2 active processes");
	CHECK(why.kind == "too_few_active");
	CHECK(why.most == 1);
	// A plan that can be made leaves the reason as it was found: `other`, no count.
	REQUIRE(makePlan({Operation::Split, 1, "n2", "", {}}, 1, m, plan, &why).empty());
	CHECK(why.kind == "other");
	CHECK(why.most == -1);
	CHECK_FALSE(makePlan({Operation::Split, 1, "n2", "", {1, 2}}, 1, m, plan, &why).empty());
	CHECK(why.kind == "other");
	CHECK(why.most == -1);

	// The PCM C API: only the last slots may leave. Active n1, n2, n1, n1: of n1's three, the last two may.
	auto c = pool(5, 4, {"n1", "n2", "n1", "n1", "n2"});
	const std::string refused = makePlan({Operation::Merge, 3, "", "n1", {}}, 1, c, plan, &why);
	CHECK(refused.find("the PCM C API keeps the ranks of the processes that stay") != std::string::npos);
	CHECK(why.kind == "merge_ranks");
	CHECK(why.most == 2);
	REQUIRE(makePlan({Operation::Merge, 2, "", "n1", {}}, 1, c, plan, &why).empty());
	CHECK(plan.leavers == std::vector<int>{2, 3});
	// n2's process is not among the last: none of n2's may leave.
	CHECK_FALSE(makePlan({Operation::Merge, 1, "", "n2", {}}, 1, c, plan, &why).empty());
	CHECK(why.kind == "merge_ranks");
	CHECK(why.most == 0);
	CHECK_FALSE(makePlan({Operation::Merge, 2, "", "n2", {}}, 1, c, plan, &why).empty());
	CHECK(why.kind == "too_few_active");
	CHECK(why.most == 1);
	// The C++ API lets any of them leave: no merge_ranks.
	c.reusable = true;
	REQUIRE(makePlan({Operation::Merge, 3, "", "n1", {}}, 1, c, plan, &why).empty());
}
