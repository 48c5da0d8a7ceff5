"""Subscriptions: cursors in use, consumers, dispatchers, key selectors and delayed delivery."""
