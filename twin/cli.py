"""``twin`` command line."""

from __future__ import annotations

import asyncio
import logging
import sys

from twin import settings as settings_mod
from twin.scenario import ScenarioError


def main(argv: list[str] | None = None) -> int:
    command, settings = settings_mod.parse(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=settings.log_level.upper(), format="%(message)s")
    logging.getLogger("amqtt").setLevel(logging.CRITICAL)
    logging.getLogger("transitions").setLevel(logging.ERROR)
    if command == "run":
        from twin.serve import serve

        try:
            asyncio.run(serve(settings))
        except ScenarioError as err:
            print(f"twin: {err}", file=sys.stderr)
            return 2
        except OSError as err:
            print(f"twin: {err}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
