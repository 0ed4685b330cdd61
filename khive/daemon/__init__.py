"""The warm per-user daemon: one process per user keeps a project's packs, indexes and connections open.

    paths.py      where the socket, pid file, log and spawn lock live; settings from the environment
    frames.py     4-byte big-endian length + orjson body, with a size limit checked before reading
    protocol.py   message shapes and the identity key a client and a daemon compare
    server.py     the anyio Unix-socket server: peer check, hello, requests through ``dispatch``
    lifecycle.py  start-up (single instance, stale cleanup), warm_all, idle shutdown
    client.py     the client side: forward a request or spawn the daemon, else say why to dispatch locally
    __main__.py   ``python -m khive.daemon``: how a client starts the daemon (never through khive.cli)

``khive daemon run|start|stop|status|logs`` lives with the other commands (``khive.cli.daemon``):
the CLI imports the daemon, never the other way round. Modules here import nothing heavy at module
level, so a forwarding ``khive request`` stays quick to start.
"""
