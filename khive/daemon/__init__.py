"""The warm per-user daemon: one process per user keeps a project's packs, indexes and connections open.

    paths.py      where the socket, pid file, log and spawn lock live; settings from the environment
    frames.py     4-byte big-endian length + orjson body, with a size limit checked before reading
    protocol.py   message shapes and the identity key a client and a daemon compare
    server.py     the anyio Unix-socket server: peer check, hello, requests through ``dispatch``
    lifecycle.py  start-up (single instance, stale cleanup), warm_all, idle shutdown
    cli.py        ``khive daemon run|start|stop|status|logs``

The client side (forward or spawn, fall back to local dispatch) is ``khive.client``. Modules here
import nothing heavy at module level, so a forwarding ``khive request`` stays quick to start.
"""
