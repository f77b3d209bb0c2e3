// SPDX-License-Identifier: Apache-2.0
#include "zmq_transport.h"

#include <algorithm>

#include <zmq_addon.hpp>

namespace malleo {

namespace {

constexpr int kSendHighWaterMark = 1000;

std::span<const uint8_t> bytes(const zmq::message_t &frame)
{
	return {static_cast<const uint8_t *>(frame.data()), frame.size()};
}

} // namespace

ZmqTransport::ZmqTransport(std::string selfId, std::size_t maxMessageBytes, bool jsonText)
	: selfId_(std::move(selfId)), maxMessageBytes_(maxMessageBytes), jsonText_(jsonText),
	  context_(1), peerInbox_(context_, zmq::socket_type::router),
	  localInbox_(context_, zmq::socket_type::router), remoteInbox_(context_, zmq::socket_type::router),
	  peerMonitor_(context_, peerInbox_, "peer-inbox"), remoteMonitor_(context_, remoteInbox_, "remote-inbox")
{
	for (zmq::socket_t *s : {&peerInbox_, &localInbox_, &remoteInbox_}) {
		s->set(zmq::sockopt::linger, 0);
		s->set(zmq::sockopt::router_mandatory, 1);
		// A safety net far above the checked limit: ZeroMQ drops the
		// connection past it, below it our decoder counts the rejection.
		s->set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(4 * maxMessageBytes_ + 4096));
		s->set(zmq::sockopt::handshake_ivl, kHandshakeTimeoutMs);
	}
	// No ROUTER_HANDOVER: a new connection that claimed a routing id in use would take its route over and cut the
	// connection that had it (issue 46: an allowed key made a node drop another by connecting with its id). The
	// inbox only receives, so a routing id gives nothing: the sockets to peers set none, ZeroMQ numbers each
	// connection, and a claimed id that is in use leaves the connection that has it alone.
}

void ZmqTransport::capConnections(std::size_t perInbox, std::size_t perAddress)
{
	// A connection younger than this may still be in its handshake; an older one has finished it.
	const double handshakeWindow = kHandshakeTimeoutMs / 1000.0 + 1.0;
	peerMonitor_.setCaps(perInbox, perAddress, handshakeWindow);
	remoteMonitor_.setCaps(perInbox, perAddress, handshakeWindow);
}

ZmqTransport::ConnectionTally ZmqTransport::watchConnections(double now)
{
	ConnectionTally tally;
	const InboxMonitor::Tally peer = peerMonitor_.read(now);
	const InboxMonitor::Tally remote = remoteMonitor_.read(now);
	tally.peerEnded = peer.ended;
	tally.peerClosed = peer.closed;
	tally.remoteClosed = remote.closed;
	tally.lastClosedFrom = remote.closed ? remote.lastClosedFrom : peer.lastClosedFrom;
	return tally;
}

ZmqTransport::~ZmqTransport()
{
	close(0);
}

void ZmqTransport::enableCurve(CurveKeyPair keys, bool remote)
{
	keys_ = std::move(keys);
	// Bound before any CURVE socket listens: libzmq lets a handshake through unasked when no handler is bound.
	zap_ = zmq::socket_t(context_, zmq::socket_type::rep);
	zap_.set(zmq::sockopt::linger, 0);
	zap_.bind("inproc://zeromq.zap.01");
	const auto server = [this](zmq::socket_t &s, const char *domain) {
		s.set(zmq::sockopt::curve_server, 1);
		s.set(zmq::sockopt::curve_secretkey, keys_.secretKey);
		s.set(zmq::sockopt::zap_domain, domain);
	};
	server(peerInbox_, kZapDomainPeer);
	if (remote)
		server(remoteInbox_, kZapDomainApp);
}

std::optional<ZapRequest> ZmqTransport::receiveZap()
{
	std::vector<zmq::message_t> frames;
	if (!zap_ || !zmq::recv_multipart(zap_, std::back_inserter(frames), zmq::recv_flags::dontwait))
		return std::nullopt;
	// version, request id, domain, address, identity, mechanism, credentials...
	ZapRequest request;
	if (frames.size() >= 6) {
		request.requestId = frames[1].to_string();
		request.domain = frames[2].to_string();
		request.address = frames[3].to_string();
		request.mechanism = frames[5].to_string();
	}
	if (request.mechanism == "CURVE" && frames.size() >= 7 && frames[6].size() == 32) {
		char text[41] = {};
		if (zmq_z85_encode(text, static_cast<const uint8_t *>(frames[6].data()), 32))
			request.publicKey = text;
	}
	return request;
}

void ZmqTransport::replyZap(const ZapRequest &request, bool allowed, const std::string &userId,
			    const std::string &why)
{
	const std::string version = "1.0", status = allowed ? "200" : "400", metadata;
	std::array<zmq::const_buffer, 6> parts = {zmq::buffer(version), zmq::buffer(request.requestId),
						  zmq::buffer(status),	zmq::buffer(why),
						  zmq::buffer(userId),	zmq::buffer(metadata)};
	try {
		zmq::send_multipart(zap_, parts, zmq::send_flags::dontwait);
	} catch (const zmq::error_t &) {
		// libzmq's own end of the pair: never full, and it keeps the request until answered
	}
}

std::string ZmqTransport::bindPeer(const std::string &listen)
{
	peerInbox_.bind(listen);
	return peerInbox_.get(zmq::sockopt::last_endpoint);
}

void ZmqTransport::bindLocal(const std::string &endpoint)
{
	localInbox_.bind(endpoint);
}

std::string ZmqTransport::bindRemote(const std::string &listen)
{
	remoteInbox_.bind(listen);
	return remoteInbox_.get(zmq::sockopt::last_endpoint);
}

std::optional<Incoming> ZmqTransport::receive(zmq::socket_t &socket)
{
	std::vector<zmq::message_t> frames;
	auto n = zmq::recv_multipart(socket, std::back_inserter(frames), zmq::recv_flags::dontwait);
	if (!n)
		return std::nullopt;
	Incoming in;
	in.routingId = frames[0].to_string();
	if (frames.size() != 3) {
		in.rejection = Rejection{"bad_header",
					 "expected 2 frames (header, body), got " +
						 std::to_string(frames.size() - 1)};
		return in;
	}
	// The ZAP handler's User-Id: the node of the key the connection was made with (absent without CURVE).
	if (const char *user = zmq_msg_gets(frames[1].handle(), "User-Id"))
		in.userId = user;
	in.rejection = decodeMessage(bytes(frames[1]), bytes(frames[2]), maxMessageBytes_, in.message);
	return in;
}

bool ZmqTransport::sendPeer(const std::string &endpoint, const std::string &serverKey, const Message &message)
{
	if (curve() && serverKey.empty())
		return false;
	auto it = dealers_.find(endpoint);
	// Another node at this endpoint than the socket was made for (an agent restarted there under another id).
	if (it != dealers_.end() && it->second.serverKey != serverKey) {
		dealers_.erase(it);
		it = dealers_.end();
	}
	if (it == dealers_.end()) {
		if (dealers_.size() >= maxOutgoing_)
			closeLeastRecentDealer();
		try {
			zmq::socket_t dealer(context_, zmq::socket_type::dealer);
			dealer.set(zmq::sockopt::sndhwm, kSendHighWaterMark);
			dealer.set(zmq::sockopt::sndtimeo, 0);
			dealer.set(zmq::sockopt::linger, 0);
			if (curve()) {
				dealer.set(zmq::sockopt::curve_serverkey, serverKey);
				dealer.set(zmq::sockopt::curve_publickey, keys_.publicKey);
				dealer.set(zmq::sockopt::curve_secretkey, keys_.secretKey);
			}
			dealer.connect(endpoint);
			it = dealers_.emplace(endpoint, Dealer{std::move(dealer), 0, curve() ? serverKey : ""}).first;
		} catch (const zmq::error_t &) {
			return false; // a malformed endpoint from the network, or no socket left
		}
	}
	it->second.lastUse = ++uses_;
	WireFrames frames = encodeMessage(message, ++sequence_, jsonText_);
	std::array<zmq::const_buffer, 2> parts = {zmq::buffer(frames.header), zmq::buffer(frames.body)};
	try {
		return zmq::send_multipart(it->second.socket, parts, zmq::send_flags::dontwait).has_value();
	} catch (const zmq::error_t &) {
		return false;
	}
}

void ZmqTransport::closeLeastRecentDealer()
{
	auto oldest = std::min_element(dealers_.begin(), dealers_.end(), [](const auto &a, const auto &b) {
		return a.second.lastUse < b.second.lastUse;
	});
	if (oldest != dealers_.end()) {
		dealers_.erase(oldest);
		++dealersClosedForRoom_;
	}
}

void ZmqTransport::disconnectPeer(const std::string &endpoint)
{
	dealers_.erase(endpoint);
}

bool ZmqTransport::sendLocal(const std::string &routingId, const Message &message)
{
	return reply(localInbox_, routingId, message);
}

bool ZmqTransport::sendRemote(const std::string &routingId, const Message &message)
{
	return reply(remoteInbox_, routingId, message);
}

bool ZmqTransport::reply(zmq::socket_t &socket, const std::string &routingId, const Message &message)
{
	WireFrames frames = encodeMessage(message, ++sequence_, jsonText_);
	std::array<zmq::const_buffer, 3> parts = {zmq::buffer(routingId), zmq::buffer(frames.header),
						  zmq::buffer(frames.body)};
	try {
		return zmq::send_multipart(socket, parts, zmq::send_flags::dontwait).has_value();
	} catch (const zmq::error_t &) {
		return false; // EHOSTUNREACH: the client has gone
	}
}

void ZmqTransport::close(int lingerMs)
{
	for (auto &[endpoint, dealer] : dealers_) {
		dealer.socket.set(zmq::sockopt::linger, lingerMs);
		dealer.socket.close();
	}
	dealers_.clear();
	peerMonitor_.stop(peerInbox_);
	remoteMonitor_.stop(remoteInbox_);
	peerInbox_.close();
	if (zap_)
		zap_.close();
	localInbox_.close();
	remoteInbox_.close();
	context_.close();
}

} // namespace malleo
