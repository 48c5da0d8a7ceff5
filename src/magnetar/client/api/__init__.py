"""What the core and both faces share, with no I/O (as Pulsar's ``pulsar-client-api``): messages
and message ids (``message``), producer and consumer configurations (``config``), policies
(``policies``), authentication plugins (``auth``), the official client's enums and loggers
(``compat``) and argument checks (``arguments``). Imports only ``exceptions`` of the client.
"""
