"""magnetar: a light messaging broker with Apache Pulsar's model and wire protocol."""

__version__ = "0.1.0"
