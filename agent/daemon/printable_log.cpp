// SPDX-License-Identifier: Apache-2.0
#include "printable_log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <malleo/message.h>

namespace malleo {

namespace {

// Hands each message to the sink it wraps with its text made printable; the pattern (time, level, colour) is that
// sink's own, added after, so the colour codes the agent writes itself are kept.
class PrintableSink final : public spdlog::sinks::sink
{
public:
	explicit PrintableSink(spdlog::sink_ptr inner) : inner_(std::move(inner)) {}

	void log(const spdlog::details::log_msg &msg) override
	{
		const std::string text = printableText({msg.payload.data(), msg.payload.size()}, msg.payload.size());
		spdlog::details::log_msg clean = msg;
		clean.payload = spdlog::string_view_t(text.data(), text.size());
		inner_->log(clean);
	}
	void flush() override { inner_->flush(); }
	void set_pattern(const std::string &pattern) override { inner_->set_pattern(pattern); }
	void set_formatter(std::unique_ptr<spdlog::formatter> formatter) override
	{
		inner_->set_formatter(std::move(formatter));
	}

private:
	spdlog::sink_ptr inner_;
};

} // namespace

std::shared_ptr<spdlog::logger> makePrintableLogger(const std::string &name)
{
	auto sink = std::make_shared<PrintableSink>(std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
	auto logger = std::make_shared<spdlog::logger>(name, std::move(sink));
	spdlog::register_logger(logger);
	return logger;
}

} // namespace malleo
