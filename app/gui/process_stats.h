#pragma once
// This process's resident memory and thread count, read from /proc: the soak's figures and the
// cancel test's "no thread left behind" check use the same readers.

namespace hipstudio::gui {

// Resident set size in MiB (/proc/self/statm).
double resident_mib();
// A "Field:  123 kB" line of /proc/self/status in MiB (RssAnon, RssFile, RssShmem), 0 if absent.
double status_mib(const char* field);
// Threads of this process (/proc/self/task).
int thread_count();
// The thread count once it equals `expected`, or what it is after `bound_s` seconds: a joined
// thread can stay listed in /proc/self/task for a moment while the kernel finishes its exit.
int thread_count_settled(int expected, double bound_s);

}  // namespace hipstudio::gui
