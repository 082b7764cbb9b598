"""ctp from Python: Paddle static programs, the collective transpilers, the executor.

    import ctp
    startup = ctp.load("startup.pb")              # protobuf or JSON
    main = ctp.load("main.pb")
    startup, main = ctp.transpile(startup, main, mode="grad_allreduce", rank=0,
                                  endpoints=["127.0.0.1:6170", "127.0.0.1:6171"])
    main.save("out/main.pb")

Errors are raised as ctp.Error. docs/python.md describes the package.
"""
from ._ctp import *  # noqa: F401,F403  (the extension module's classes and functions)
from ._ctp import Error, Program, __version__  # noqa: F401
from .paddle import from_paddle, to_paddle_bytes  # noqa: F401
