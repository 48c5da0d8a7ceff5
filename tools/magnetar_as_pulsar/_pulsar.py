"""The official client's C extension module, as far as the suite imports names from it: magnetar's
equivalents (its configuration objects are not the C++ ones: tests that call their setters fail)."""

from magnetar.client import ConsumerConfig as ConsumerConfiguration  # noqa: F401
from magnetar.client import MessageId  # noqa: F401
from magnetar.client import ProducerConfig as ProducerConfiguration  # noqa: F401
from magnetar.client import RegexSubscriptionMode  # noqa: F401
from magnetar.client import Result  # noqa: F401
