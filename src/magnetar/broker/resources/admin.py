"""The admin core of one broker: every pulsar-admin operation, grouped by resource.

``admin_for(service)`` returns the one :class:`BrokerAdmin` of a service; its attributes are the
resources (``admin.tenants.create_tenant(...)``, ``admin.topics.delete_topic(...)``). The REST
routes in ``magnetar.admin`` are thin wrappers around these methods; a refused operation raises a
:mod:`magnetar.broker.resources.errors` error and changes nothing.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from magnetar.broker.resources.base import ResourceContext
from magnetar.broker.resources.broker_stats import BrokerStatsResources
from magnetar.broker.resources.cluster_topology import ClusterTopologyResources
from magnetar.broker.resources.messages import MessageResources
from magnetar.broker.resources.namespace_properties import NamespacePropertyResources
from magnetar.broker.resources.namespaces import NamespaceResources
from magnetar.broker.resources.permissions import PermissionResources
from magnetar.broker.resources.policies import PolicyResources
from magnetar.broker.resources.stats import StatsResources
from magnetar.broker.resources.stats_tracker import StatsTracker
from magnetar.broker.resources.subscription_state import SubscriptionStateResources
from magnetar.broker.resources.subscriptions import SubscriptionResources
from magnetar.broker.resources.tenants import ClusterResources, TenantResources
from magnetar.broker.resources.topic_storage import TopicStorageResources
from magnetar.broker.resources.topics import TopicResources

if TYPE_CHECKING:
    from magnetar.broker.service import BrokerService


class BrokerAdmin:
    """Every admin operation on one BrokerService, by resource."""

    def __init__(self, service: BrokerService) -> None:
        self.service = service
        self.ctx = ResourceContext(service)
        #: rates of topics, subscriptions, producers and consumers (sampled once started)
        self.tracker = StatsTracker(service)
        self.policies = PolicyResources(self.ctx)
        self.topics = TopicResources(self.ctx, self.policies)
        self.namespaces = NamespaceResources(self.ctx, self.topics)
        self.clusters = ClusterResources(self.ctx, self.policies)
        self.namespace_properties = NamespacePropertyResources(self.ctx)
        self.cluster_topology = ClusterTopologyResources(self.ctx)
        self.tenants = TenantResources(self.ctx, self.namespaces)
        self.subscriptions = SubscriptionResources(self.ctx)
        self.messages = MessageResources(self.ctx)
        self.permissions = PermissionResources(self.ctx)
        self.stats = StatsResources(self.ctx, self.policies, self.tracker)
        self.broker_stats = BrokerStatsResources(self.ctx, self.stats, self.tracker)
        self.topic_storage = TopicStorageResources(self.ctx, self.stats)
        self.subscription_state = SubscriptionStateResources(self.ctx)

    def start(self) -> None:
        """Start background sampling of statistics (needs a running loop)."""
        self.tracker.start()


_ADMINS: weakref.WeakKeyDictionary[BrokerService, BrokerAdmin] = weakref.WeakKeyDictionary()


def admin_for(service: BrokerService) -> BrokerAdmin:
    """The one BrokerAdmin of a service (created on first use)."""
    admin = _ADMINS.get(service)
    if admin is None:
        admin = _ADMINS[service] = BrokerAdmin(service)
    return admin
