"""PySpark connector: the "pulsar" data source (batch and streaming, read and write).

```python
import magnetar.spark

magnetar.spark.register(spark)
df = spark.read.format("pulsar").option("service.url", "pulsar://localhost:6650").option("topic", "t").load()
```

Built on PySpark's Python Data Source API (pyspark >= 4.2, ``pip install 'magnetar[spark]'``);
see docs/SPARK.md for the options, the offsets and the delivery guarantees.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PulsarDataSource", "local_session", "register"]


def register(spark: Any) -> None:
    """Register the "pulsar" data source with a SparkSession."""
    # the data source imports pyspark: 400 ms CPU, not paid by `import magnetar.spark` (executors, magnetar sql)
    from magnetar.spark.source import PulsarDataSource

    spark.dataSource.register(PulsarDataSource)


def local_session(app_name: str = "magnetar", master: str = "local[*]", **conf: str) -> Any:
    """A local SparkSession with the "pulsar" data source registered.

    Python workers run this interpreter (``PYSPARK_PYTHON`` unless already set), so that they
    import the same magnetar; the UI is off and logging at WARN unless ``conf`` says otherwise.
    """
    import os
    import sys

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    settings = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.sql.session.timeZone": "UTC", **conf}
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    register(spark)
    return spark


def __getattr__(name: str) -> Any:
    if name == "PulsarDataSource":
        # the data source imports pyspark: 400 ms CPU, not paid by `import magnetar.spark` (executors, magnetar sql)
        from magnetar.spark.source import PulsarDataSource

        return PulsarDataSource
    raise AttributeError(name)
