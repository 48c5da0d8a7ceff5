"""The admin core by resource: clusters and tenants, namespaces, policies, topics, subscriptions,
messages and statistics. Operations raise :mod:`.errors`; the HTTP layer maps them to statuses.

Start from :func:`magnetar.broker.resources.admin.admin_for`. This package's ``__init__`` imports
nothing, so low modules (the policy validators) can import :mod:`.errors` alone.
"""
