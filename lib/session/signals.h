// The reporter: a thread that writes the summary every summary_interval_s,
// and on SIGTERM/SIGINT, then lets the signal act as it did before. It also
// runs the session's once-a-second `tick` (the device health sampler,
// health/sampler.h, and the topology's one reading, topology/topology.h):
// gpuslack's one background thread for such work, so no NVML library is
// loaded and no sysfs tree walked on an application thread.
//
// Note [Signals]: formatting a summary is not async-signal-safe, so the
// handler only writes the signal number into a pipe and waits (up to 3 s,
// sleeping with nanosleep) for the reporter thread to finish writing. Then
// it chains: to the handler that was installed before (sa_handler or
// sa_sigaction), or, if that was SIG_DFL (also as a null sa_sigaction with
// SA_SIGINFO), restores SIG_DFL and re-raises the signal, so the process
// ends with the same status it would have had without gpuslack.
//
// Nothing else about the signal changes (tests/interpose/summary_test.py:
// test_signal_still_interrupts_a_blocking_read,
// test_signals_the_program_ignores_stay_ignored_for_it_and_what_it_execs,
// test_a_handler_installed_after_gpuslacks_replaces_it_and_may_chain_to_it,
// and the test_sigterm_* / test_sigint_* ones before them):
//   - a signal the program ignores (SIG_IGN: `trap '' INT TERM`, nohup) gets
//     no handler: it stays ignored, in /proc/self/status SigIgn, and for
//     every program it execs;
//   - ours is installed with the flags and mask of the handler it chains to
//     (SA_RESTART only if that one had it: a blocking read() in a program
//     whose handler has no SA_RESTART, CPython's, still fails with EINTR;
//     SA_SIGINFO only if that one had it), so sigaction() reads back the
//     same flags and mask;
//   - a handler the program installs later simply replaces ours, with its
//     own flags; if it chains to ours (the old action sigaction returned),
//     ours writes the summary and chains on as above; if it restores ours,
//     ours acts as before.
// The one visible difference: where the disposition was SIG_DFL,
// sigaction() reads back gpuslack's handler (signals:false leaves both
// signals alone). The reporter thread blocks both signals, so the handler
// never runs on it.
//
// Thread safety: start_reporter is called once, from session::start.
#pragma once

namespace gpuslack {
namespace session {

// Starts the reporter thread if `interval_s` > 0, `signals` is set or
// `tick` is given, and installs the handlers when `signals` is set. `tick`
// (may be null) runs on the reporter when it starts, then about once a
// second.
void start_reporter(double interval_s, bool signals, void (*tick)());

// Note [A signal on another thread holds the exit back]: the kernel may
// deliver SIGTERM to any thread that does not block it. When that is not
// the main thread, the handler waits there for the reporter while the main
// thread runs on; were the program to end normally meanwhile (its sleep
// over), it would exit 0 instead of dying of the signal it was sent. So
// the summary at exit first waits (at most the handler's 3 s, plus one) for
// every handler in flight to chain: one whose action is SIG_DFL ends the
// process; the program's own handler is called once it is no longer
// counted (it may call exit() itself). Test: summary_test.py,
// test_sigterm_right_after_the_first_call_always_kills.
//
// Called from the summary at exit, before it is written.
void hold_exit_for_signals();

// In a forked child: the parent's reporter thread does not exist here;
// disarm the handlers' pipe so they only chain, until a new session starts.
void reporter_after_fork_child();

}  // namespace session
}  // namespace gpuslack
