// SPDX-License-Identifier: Apache-2.0
#include "endpoints.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace malleo {

namespace {

// sockaddr_un.sun_path less its terminator: a longer ipc path cannot be bound or reached.
constexpr std::size_t kMaxIpcPath = 107;

bool isDigits(std::string_view s)
{
	return !s.empty() &&
	       std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// A bracketed IPv6 address as ZeroMQ takes it, with an optional zone: [fe80::1%eth0].
bool isIpv6(std::string_view host)
{
	if (host.size() < 3 || host.front() != '[' || host.back() != ']')
		return false;
	const std::string_view inside = host.substr(1, host.size() - 2);
	const std::size_t zone = inside.find('%');
	const std::string_view address = inside.substr(0, zone);
	if (address.find(':') == std::string_view::npos)
		return false;
	const auto addressChar = [](unsigned char c) {
		return std::isxdigit(c) || c == ':' || c == '.';
	};
	const auto zoneChar = [](unsigned char c) {
		return std::isalnum(c) || c == '-' || c == '_' || c == '.';
	};
	return std::all_of(address.begin(), address.end(), addressChar) &&
	       (zone == std::string_view::npos ||
		(zone + 1 < inside.size() &&
		 std::all_of(inside.begin() + long(zone) + 1, inside.end(), zoneChar)));
}

// A host name, an IPv4 address or (to bind) an interface name: what resolves, ZeroMQ resolves when
// it connects.
bool isName(std::string_view host)
{
	return !host.empty() && std::all_of(host.begin(), host.end(), [](unsigned char c) {
		return std::isalnum(c) || c == '-' || c == '.' || c == '_';
	});
}

std::string tcpProblem(std::string_view endpoint, std::string_view rest, EndpointUse use)
{
	const bool bind = use == EndpointUse::Bind;
	const std::size_t colon = rest.rfind(':');
	if (colon == std::string_view::npos || (rest.front() == '[' && colon < rest.find(']')))
		return fmt::format("'{}' has no port: expected tcp://HOST:PORT", endpoint);
	const std::string_view host = rest.substr(0, colon), port = rest.substr(colon + 1);
	if (host == "*") {
		if (!bind)
			return fmt::format(
			    "'{}': * is an address to bind; a peer needs a host to reach",
			    endpoint);
	} else if (!isIpv6(host) && !isName(host)) {
		return fmt::format(
		    "'{}': '{}' is not a host name, an IPv4 address or an [IPv6] address", endpoint,
		    host);
	}
	if (port == "*") {
		if (!bind)
			return fmt::format(
			    "'{}': port * is for binding; a peer needs the port to reach",
			    endpoint);
		return {};
	}
	const unsigned lowest = bind ? 0 : 1;
	if (!isDigits(port) || port.size() > 5 || std::stoul(std::string(port)) > 65535 ||
	    std::stoul(std::string(port)) < lowest)
		return fmt::format("'{}': the port '{}' is not a number from {} to 65535{}",
				   endpoint, port, lowest, bind ? " or *" : "");
	return {};
}

} // namespace

std::string endpointProblem(std::string_view endpoint, EndpointUse use)
{
	if (endpoint.starts_with("tcp://"))
		return tcpProblem(endpoint, endpoint.substr(6), use);
	if (endpoint.starts_with("ipc://")) {
		const std::string_view path = endpoint.substr(6);
		if (path.empty())
			return fmt::format("'{}' has no path: expected ipc://PATH", endpoint);
		if (path.size() > kMaxIpcPath)
			return fmt::format("'{}': the path is longer than {} characters", endpoint,
					   kMaxIpcPath);
		return {};
	}
	if (const std::size_t scheme = endpoint.find("://"); scheme != std::string_view::npos)
		return fmt::format(
		    "'{}': transport '{}' is not supported: expected tcp://HOST:PORT or ipc://PATH",
		    endpoint, endpoint.substr(0, scheme));
	// "node2:5470" is the usual slip: say what was most likely meant.
	const bool hostPort = endpoint.find(':') != std::string_view::npos &&
			      tcpProblem(endpoint, endpoint, use).empty();
	return fmt::format("'{}' is not an endpoint: expected tcp://HOST:PORT or ipc://PATH{}",
			   endpoint, hostPort ? fmt::format(" (tcp://{}?)", endpoint) : "");
}

std::string parseHostPort(std::string_view text, HostPort &out)
{
	const std::size_t colon = text.rfind(':');
	if (colon == std::string_view::npos || colon == 0 || (text.front() == '[' && colon < text.find(']')))
		return fmt::format("expected HOST:PORT (e.g. 127.0.0.1:9470), got \"{}\"", text);
	const std::string_view host = text.substr(0, colon), port = text.substr(colon + 1);
	if (!isName(host) && !isIpv6(host))
		return fmt::format("'{}' is no host name or address (an IPv6 address goes in brackets)", host);
	if (!isDigits(port) || port.size() > 5 || std::stoi(std::string(port)) > 65535)
		return fmt::format("port '{}' of '{}' is not a number from 0 (any free port) to 65535", port, text);
	out.host = host.front() == '[' ? std::string(host.substr(1, host.size() - 2)) : std::string(host);
	out.port = std::stoi(std::string(port));
	return {};
}

} // namespace malleo
