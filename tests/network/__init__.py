"""Whole runs of the suite through the fault-injecting proxy (issue 36): a flaky network never fails a
correct server, and the run leaves nothing behind."""
