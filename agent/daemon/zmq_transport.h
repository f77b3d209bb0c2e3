// SPDX-License-Identifier: Apache-2.0
// The agent's sockets: a ROUTER inbox for peers (TCP), one DEALER per peer
// endpoint for sending, a ROUTER on the local ipc endpoint for processes and
// the CLI, and a ROUTER on TCP for coordinators on other nodes. Only this layer
// touches ZeroMQ; it decodes frames and hands messages on.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <zmq.hpp>

#include <malleo/message.h>

#include "descriptor_budget.h"
#include "inbox_monitor.h"

namespace malleo {

// A received message, or the reason it could not be decoded.
struct Incoming {
	std::string routingId;
	// With CURVE, the node the sender's public key belongs to (the ZAP handler's User-Id); empty without.
	std::string userId;
	Message message;
	std::optional<Rejection> rejection;
};

// This node's CURVE key pair, Z85 text.
struct CurveKeyPair {
	std::string publicKey;
	std::string secretKey;
};

// A ZAP request (ZeroMQ RFC 27): a client's handshake waits for the answer.
struct ZapRequest {
	std::string requestId;
	std::string domain;  // which inbox: kZapDomainPeer or kZapDomainApp
	std::string address; // the client's IP address
	std::string mechanism;
	std::string publicKey; // the client's, Z85 (CURVE only)
};

constexpr const char *kZapDomainPeer = "malleo-peer";
constexpr const char *kZapDomainApp = "malleo-app";

class ZmqTransport
{
public:
	ZmqTransport(std::string selfId, std::size_t maxMessageBytes, bool jsonText);
	~ZmqTransport();

	// Before binding: the peer inbox and (if `remote`) the remote application inbox become CURVE servers whose
	// clients the ZAP handler (zapSocket()) lets in or not, and the sockets to peers CURVE clients.
	void enableCurve(CurveKeyPair keys, bool remote);
	bool curve() const { return !keys_.secretKey.empty(); }
	const std::string &publicKey() const { return keys_.publicKey; }
	// The ZAP handler's socket (inproc://zeromq.zap.01), to poll; invalid without CURVE.
	zmq::socket_t &zapSocket() { return zap_; }
	std::optional<ZapRequest> receiveZap();
	// status 200 with the node id as User-Id, or 400.
	void replyZap(const ZapRequest &request, bool allowed, const std::string &userId, const std::string &why);

	// Binds the peer inbox; returns the bound endpoint (a '*' port resolved).
	std::string bindPeer(const std::string &listen);
	void bindLocal(const std::string &endpoint);
	// Binds the remote application inbox; returns the bound endpoint.
	std::string bindRemote(const std::string &listen);

	zmq::socket_t &peerInbox() { return peerInbox_; }
	zmq::socket_t &localInbox() { return localInbox_; }
	zmq::socket_t &remoteInbox() { return remoteInbox_; }

	// Receives one message without blocking; nullopt when none is waiting.
	std::optional<Incoming> receive(zmq::socket_t &socket);

	// Sends to a peer's inbox without blocking; false if it had to be dropped. With CURVE, serverKey is the public
	// key of the node listening at endpoint (a connection to anyone else fails at the handshake); none: dropped.
	bool sendPeer(const std::string &endpoint, const std::string &serverKey, const Message &message);
	void disconnectPeer(const std::string &endpoint);

	// Replies on the local or the remote application endpoint; false if the client is gone or slow.
	bool sendLocal(const std::string &routingId, const Message &message);
	bool sendRemote(const std::string &routingId, const Message &message);

	// Outgoing sockets opened at most: kOutgoingMax, fewer under a low descriptor limit (descriptor_budget.h).
	void setMaxOutgoingSockets(std::size_t n) { maxOutgoing_ = std::min(n, kOutgoingMax); }
	// Sockets closed to make room since the last call.
	uint64_t takeSocketsClosedForRoom() { return std::exchange(dealersClosedForRoom_, 0); }

	// How long a connection to an inbox may take to finish its handshake (ZMQ_HANDSHAKE_IVL) before ZeroMQ closes
	// it: connections that send nothing, or stop halfway, hold a descriptor no longer than this. A CURVE handshake
	// between nodes takes milliseconds, its ZAP answer a turn of the event loop.
	static constexpr int kHandshakeTimeoutMs = 5000;
	// Caps on the connections accepted by the peer inbox and by the remote application inbox, each (InboxMonitor).
	void capConnections(std::size_t perInbox, std::size_t perAddress);
	// The inboxes' monitors, to poll: readable when a connection was accepted or ended. Invalid if not monitored.
	zmq::socket_t &peerMonitor() { return peerMonitor_.socket(); }
	zmq::socket_t &remoteMonitor() { return remoteMonitor_.socket(); }
	struct ConnectionTally {
		// Connections to the peer inbox that ended: a peer that left, one past a cap or its handshake time, or one
		// that ZeroMQ cut for a frame over the socket's limit (ZMQ_MAXMSGSIZE), whose frame and whatever followed
		// it are lost.
		uint64_t peerEnded = 0;
		uint64_t peerClosed = 0;   // connections to the peer inbox shut down for a cap
		uint64_t remoteClosed = 0; // the same on the remote application inbox
		std::string lastClosedFrom;
	};
	// Reads both monitors and shuts down the connections past a cap.
	ConnectionTally watchConnections(double now);

	// Gives queued messages (a leave) up to `lingerMs` to go out, then closes.
	void close(int lingerMs);

private:
	bool reply(zmq::socket_t &socket, const std::string &routingId, const Message &message);
	void closeLeastRecentDealer();

	struct Dealer {
		zmq::socket_t socket;
		uint64_t lastUse;
		std::string serverKey;
	};

	std::string selfId_;
	std::size_t maxMessageBytes_;
	bool jsonText_;
	uint32_t sequence_ = 0;
	zmq::context_t context_;
	zmq::socket_t peerInbox_;
	zmq::socket_t localInbox_;
	zmq::socket_t remoteInbox_;
	std::map<std::string, Dealer> dealers_;
	uint64_t uses_ = 0;
	uint64_t dealersClosedForRoom_ = 0;
	std::size_t maxOutgoing_ = kOutgoingMax;
	InboxMonitor peerMonitor_;   // the peer inbox's connections (zmq_socket_monitor)
	InboxMonitor remoteMonitor_; // the remote application inbox's
	CurveKeyPair keys_;
	zmq::socket_t zap_;
};

} // namespace malleo
