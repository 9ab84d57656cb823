// How the streamable transport answers a request whose answer was not there
// at once: as JSON once done (a call that asked for no progress), or as an
// event stream while it runs. Part of HttpTransport (http_transport.h).
#include <chrono>
#include <memory>
#include <mutex>

#include "base/log.h"
#include "model/call_bounds.h"
#include "transport/http_transport.h"

namespace mcpexec {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// A call that takes time: answered as an event stream, with a comment each
// second while it runs, so that a client that leaves is noticed (the write
// fails) and its run ended.
void HttpTransport::AnswerAsStream(http::Exchange& ex, const std::shared_ptr<HttpSession>& session,
                                   const std::shared_ptr<Waiter>& waiter,
                                   const jsonrpc::RequestId& id, http::Headers session_header,
                                   bool listen) {
  http::Response head;
  head.content_type = "text/event-stream";
  head.headers = std::move(session_header);
  head.headers.emplace_back("Cache-Control", "no-cache");
  head.headers.emplace_back("X-Accel-Buffering", "no");  // proxies pass each event at once
  http::StreamOptions options;
  // A listen stays open with nothing to say (no list of this server
  // changes): a comment every 15 s keeps proxies from timing it out.
  options.heartbeat_every = std::chrono::seconds(listen ? 15 : 1);
  options.heartbeat = listen ? ": listening\n\n" : ": running\n\n";
  post_streams_++;
  options.on_close = [this, session, waiter, id, listen](bool) {
    session->Forget(id, waiter);
    bool answered;
    {
      std::lock_guard<std::mutex> lock(waiter->mu);
      answered = waiter->answered;
      waiter->stream = nullptr;
      waiter->stream_gone = true;
    }
    if (!answered && !session->closed()) {
      // The client left before the answer: end its run at once.
      log::Info("client_gone", {{"transport", "http"}});
      session->mcp().Cancel(id);
    }
    if (listen) streams_--;
    post_streams_--;
    Changed();
  };
  options.on_flushed = [this] { Changed(); };
  auto stream = ex.OpenStream(std::move(head), std::move(options));
  std::lock_guard<std::mutex> lock(waiter->mu);
  // Closed already (the client read the head and left while this thread
  // waited for the lock): its on_close has run, and the waiter must not
  // hold the stream, whose on_close holds the waiter.
  if (waiter->stream_gone) return;
  waiter->stream = stream;
  for (std::string& event : waiter->early) stream->Write(std::move(event));
  waiter->early.clear();
  // No call may outlive its bound (model/call_bounds.h): past that, it is
  // answered with an error instead of waited for. A listen is answered when
  // the server stops.
  waiter->give_up = listen ? Clock::time_point::max() : Clock::now() + CallBound(config_);
  if (waiter->answer) waiter->DeliverLocked(*waiter->answer);  // it came meanwhile
}

void HttpTransport::AnswerWhenDone(const std::shared_ptr<http::Exchange>& exchange,
                                   const std::shared_ptr<HttpSession>& session,
                                   const std::shared_ptr<Waiter>& waiter,
                                   const jsonrpc::RequestId& id, http::Headers session_header) {
  post_streams_++;
  // Once, by whichever comes first: the answer (on_done) or the client's
  // leaving (Await's gone).
  auto end = [this, session, waiter, id] {
    session->Forget(id, waiter);
    post_streams_--;
    Changed();
  };
  exchange->Await([session, waiter, id, end] {
    {
      std::lock_guard<std::mutex> lock(waiter->mu);
      if (waiter->answered) return;
      waiter->answered = true;  // a late answer goes nowhere
      waiter->exchange = nullptr;
      waiter->on_done = nullptr;
    }
    if (!session->closed()) {
      // The client left before the answer: end its run at once.
      log::Info("client_gone", {{"transport", "http"}});
      session->mcp().Cancel(id);
    }
    end();
  });
  std::lock_guard<std::mutex> lock(waiter->mu);
  // The client left before this thread got here: `gone` did it all, and
  // the waiter must not hold what holds it.
  if (waiter->answered) return;
  waiter->exchange = exchange;
  waiter->headers = std::move(session_header);
  waiter->on_done = end;
  // No call may outlive its bound (model/call_bounds.h): past that, it is
  // answered with an error instead of waited for.
  waiter->give_up = Clock::now() + CallBound(config_);
  if (waiter->answer) waiter->DeliverLocked(*waiter->answer);  // it came meanwhile
}

}  // namespace mcpexec
