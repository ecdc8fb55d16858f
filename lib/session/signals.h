// The reporter: a thread that writes the summary every summary_interval_s,
// and on SIGTERM/SIGINT, then lets the signal act as it did before.
//
// Note [Signals]: formatting a summary is not async-signal-safe, so the
// handler only writes the signal number into a pipe and waits (up to 3 s,
// sleeping with nanosleep) for the reporter thread to finish writing. Then
// it chains: to the handler that was installed before (sa_handler or
// sa_sigaction, with its flags), or, if that was SIG_DFL, restores SIG_DFL
// and re-raises the signal, so the process ends with the same status it
// would have had without gpuslack; SIG_IGN stays ignored. A handler the
// application installs later simply replaces ours. The reporter thread
// blocks both signals, so the handler never runs on it.
//
// Thread safety: start_reporter is called once, from session::start.
#pragma once

namespace gpuslack {
namespace session {

// Starts the reporter thread if `interval_s` > 0 or `signals` is set, and
// installs the handlers when `signals` is set.
void start_reporter(double interval_s, bool signals);

// In a forked child: the parent's reporter thread does not exist here;
// disarm the handlers' pipe so they only chain, until a new session starts.
void reporter_after_fork_child();

}  // namespace session
}  // namespace gpuslack
