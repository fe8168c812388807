"""A third protocol, written for the tests: a key-value store over HTTP (``GET``/``PUT /kv/{key}``)."""
