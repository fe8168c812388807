"""Engine: the protocol-neutral machinery (client, outcomes, run, reports, options, catalogue, marking,
check registry)."""
