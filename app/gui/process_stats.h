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

}  // namespace hipstudio::gui
