// SPDX-License-Identifier: Apache-2.0
// The application's root agent as a source of commands (docs/protocol.md, "MPI processes"): the coordinator sends
// `poll`, picks the `command` reply up at a later probe, and sends `result` once the operation is over. Nothing here
// waits: a probe costs a non-blocking receive and, at most every MALLEO_POLL_INTERVAL seconds, a non-blocking send,
// so an absent, slow or garbled agent never holds the application up (one stderr line, then it carries on).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json_fwd.hpp>

#include <malleo/command.h>

#include "plan/refusal.h"

namespace malleo::pcm {

// Where an application's commands are: the id it registered under at its root agent (the agent hosting world rank 0
// of the launch, where `malleo force` leaves commands) and that agent's endpoints: `local` (ipc://, reachable on its
// node) and `remote` (tcp://, where coordinators on other nodes poll; empty when the agent offers none).
struct RootAgent {
	std::string app;
	std::string local;
	std::string remote;
	// The root agent's CURVE public key (Z85), with which its remote endpoint is reached; empty: plain TCP.
	std::string remoteKey;
};

class AgentCommands
{
public:
	AgentCommands() = default;
	AgentCommands(const AgentCommands &) = delete;
	AgentCommands &operator=(const AgentCommands &) = delete;
	~AgentCommands();

	// What world rank 0's profiler registered, whatever this process registered itself (Reconfigurator::shareApplication),
	// and whether this process runs on the root agent's node: there it polls the local endpoint, elsewhere the
	// remote one. Set before the first take(); an empty app or local endpoint: no polling.
	void setApplication(RootAgent root, bool onRootNode);
	const RootAgent &application() const { return root_; }
	// What libmalleo_pmpi registered this process under, with which agent, and the remote endpoint that agent
	// wrote in its agent.json next to the local one (empty without the profiler or such a file).
	static RootAgent registeredHere();

	// At a probe of the coordinator: the command the agent sent in reply to an earlier poll (op none when there is
	// none yet), and the next poll when the interval has passed. Connects at the first call, so only a process
	// that coordinates ever opens a socket. Asked again for the same iteration (spawn mode plans twice), it gives
	// the same command.
	Command take(std::int64_t iteration, int active);

	// The outcome of the operation at probe `iteration`; sent to the agent as `result` when take() handed out the
	// agent's command at that probe, nothing otherwise (a forced command, or another process coordinated). A result
	// not ok carries `refusal`, its kind for the agent's decision module (docs/protocol.md, `result`).
	void finish(std::int64_t iteration, bool ok, const std::string &text, std::int64_t before, std::int64_t after,
		    std::int64_t bytes, const Refusal &refusal = {});
	// The command taken at probe `from` is carried out at probe `to`: finish() takes `to` for it from now on.
	void retake(std::int64_t from, std::int64_t to);
	// The application said at probe `probe` that `remaining` iterations are left (PCM_Remaining_iterations): each
	// poll carries it, counted down by the probes since, so a program may say it once or at every iteration.
	void setRemaining(std::int64_t remaining, std::int64_t probe);

private:
	bool connect();
	// Makes socket_ a CURVE client of root_.remoteKey with the key of this process's node; false (warned) if none.
	bool authenticate();
	void drain();
	void accept(const nlohmann::json &reply);
	void sendPoll(std::int64_t iteration, int active);
	bool send(const nlohmann::json &message);
	void warn(const std::string &line);

	enum class State { Unconfigured, Off, On };
	State state_ = State::Unconfigured;
	RootAgent root_;
	bool onRootNode_ = true;
	std::string endpoint_;  // the one of root_'s this process polls
	std::string app_;
	double interval_ = 0.2;
	void *context_ = nullptr;
	void *socket_ = nullptr;
	std::uint32_t sequence_ = 0;
	std::uint64_t nextId_ = 1;

	bool awaiting_ = false;  // a poll is out and its reply has not come
	double polledAt_ = 0.0;
	double firstPollAt_ = 0.0;
	bool known_ = false;	   // the agent has answered a poll with a command (or none): it knew the application
	double forgottenAt_ = 0.0; // when an agent that knew it answered unknown_app: it restarted
	double nextPollAt_ = 0.0;
	std::optional<Command> ready_;  // arrived, not handed out yet
	std::uint64_t readyId_ = 0;

	std::optional<Command> taken_;  // handed out, its result not sent yet
	std::int64_t takenIteration_ = 0; // the probe it is carried out at
	std::uint64_t takenId_ = 0;
	double takenAt_ = 0.0;

	std::int64_t remaining_ = -1;  // -1: the application has not said
	std::int64_t remainingAt_ = 0;

	std::string lastWarning_;  // the same trouble is said once
};

} // namespace malleo::pcm
