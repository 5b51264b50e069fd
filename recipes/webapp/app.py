"""A small web app: Flask from Debian 13, served by Werkzeug on port 8000."""

import platform

from flask import Flask, jsonify

app = Flask(__name__)


@app.get("/")
def index():
    return jsonify(app="ocibuild webapp", python=platform.python_version())


@app.get("/health")
def health():
    return "ok\n"


if __name__ == "__main__":
    app.run(host="0.0.0.0", port=8000)
