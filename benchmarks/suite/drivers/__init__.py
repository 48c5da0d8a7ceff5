"""One module per client library: each runs the suite's scenarios (produce, consume, rate, e2e,
fanout, topics, sync) against one system and returns a JSON-able result."""
