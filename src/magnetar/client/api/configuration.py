"""The official C extension's configuration objects (``_pulsar.ProducerConfiguration``,
``_pulsar.ConsumerConfiguration``): one call-style accessor per option.

``conf.send_timeout_millis(12)`` sets an option (checked at once, as :class:`ProducerConfig`
checks it; returns the configuration, so calls chain as the C++ setters do) and
``conf.send_timeout_millis()`` reads it. The options are those of :class:`ProducerConfig` and
:class:`ConsumerConfig`, with their defaults; ``build()`` makes that configuration, and
:meth:`options` gives the options set as keywords for ``Client.create_producer`` / ``subscribe``
(``client.create_producer(topic, **conf.options())``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, ClassVar

from magnetar.client.api.config import ConsumerConfig, ProducerConfig

#: options the official accessors read as "" while unset (the C++ objects hold a std::string)
_EMPTY_STRING_OPTIONS = frozenset({"producer_name", "consumer_name"})


class _CallStyleConfiguration:
    """Options read and written by call-style accessors, checked by building ``_config_type``."""

    _config_type: ClassVar[type]

    def __init__(self) -> None:
        self._options: dict[str, Any] = {}
        defaults = self._config_type()
        self._defaults = {f.name: getattr(defaults, f.name) for f in dataclasses.fields(defaults)}

    def __getattr__(self, name: str) -> Callable[..., Any]:
        # only reached for names that are not attributes: the option accessors
        if name.startswith("_") or name not in self._defaults:
            raise AttributeError(f"{type(self).__name__} has no option {name!r}")
        return functools.partial(self._access, name)

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *self._defaults})

    def _access(self, name: str, *value: Any) -> Any:
        if not value:
            current = self._options.get(name, self._defaults[name])
            if current is None and name in _EMPTY_STRING_OPTIONS:
                return ""
            return current
        if len(value) > 1:
            raise TypeError(f"{name}() takes at most one value")
        trial = {**self._options, name: value[0]}
        checked = self._config_type(**trial)  # raises InvalidArgument / InvalidConfiguration
        # the checked (normalised) value: an official enum or a plain int comes back as magnetar's enum
        self._options[name] = getattr(checked, name)
        return self

    def options(self) -> dict[str, Any]:
        """The options set so far (the others keep their defaults)."""
        return dict(self._options)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self._options.items())})"


class ProducerConfiguration(_CallStyleConfiguration):
    """``_pulsar.ProducerConfiguration``: producer options by call-style accessors (see the module)."""

    _config_type = ProducerConfig

    def build(self) -> ProducerConfig:
        """The checked :class:`ProducerConfig`."""
        return ProducerConfig(**self._options)


class ConsumerConfiguration(_CallStyleConfiguration):
    """``_pulsar.ConsumerConfiguration``: consumer options by call-style accessors (see the module)."""

    _config_type = ConsumerConfig

    def build(self) -> ConsumerConfig:
        """The checked :class:`ConsumerConfig`."""
        return ConsumerConfig(**self._options)


__all__ = ["ConsumerConfiguration", "ProducerConfiguration"]
