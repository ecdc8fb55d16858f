// Runs a program as a child process with extra environment variables and
// captures what it prints (stdout and stderr together) and its exit code:
// how the interposition tests put libgpuslack.so under a fresh process.
#pragma once

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

extern char** environ;

struct ChildResult {
  int exit_code = -1;  // -1: did not exit normally
  std::string output;
};

inline ChildResult run_child(const std::vector<std::string>& argv,
                             const std::vector<std::pair<std::string, std::string>>& env,
                             const std::string& cwd = "") {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    bool overridden = false;
    for (const auto& [k, v] : env)
      if (kv.compare(0, k.size() + 1, k + "=") == 0) overridden = true;
    if (!overridden) env_strings.push_back(kv);
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  // A sanitizer build's libgpuslack.so needs the sanitizer runtime, which
  // then does not come first when the library is preloaded.
  env_strings.push_back("ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0");
  std::vector<char*> cenv, cargv;
  for (auto& s : env_strings) cenv.push_back(s.data());
  cenv.push_back(nullptr);
  std::vector<std::string> args = argv;
  for (auto& s : args) cargv.push_back(s.data());
  cargv.push_back(nullptr);

  int fds[2];
  if (pipe(fds) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    execve(cargv[0], cargv.data(), cenv.data());
    _exit(127);
  }
  close(fds[1]);
  ChildResult r;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) r.output.append(buf, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r;
}
