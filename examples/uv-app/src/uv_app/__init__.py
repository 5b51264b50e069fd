"""ocibuild's example uv project: a command line app whose own package ocibuild builds into a
wheel (`[python] project`, recipes/uv-app.toml) and installs with its dependencies from
uv.lock."""

import json
import sys
from importlib.metadata import version

import click


@click.command()
@click.option("--name", default="world", help="who to greet")
def main(name: str) -> None:
    """Greets NAME, saying which Python and click it runs on."""
    click.echo(
        json.dumps(
            {
                "app": "uv-app",
                "hello": name,
                "python": "%d.%d.%d" % sys.version_info[:3],
                "click": version("click"),
            }
        )
    )
