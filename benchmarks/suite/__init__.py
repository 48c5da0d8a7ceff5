"""The peer suite (``make bench``): magnetar side by side with Redis Streams, NATS JetStream,
RabbitMQ streams, pulsar-lite and Apache Pulsar, each started on 127.0.0.1 by the suite itself."""
