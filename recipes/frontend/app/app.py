"""The example app with a frontend: Flask from Debian 13 serving /app/static (built by the
recipe's `frontend` step) on port 8000."""

from flask import Flask

app = Flask(__name__, static_folder="/app/static", static_url_path="/static")


@app.get("/")
def index():
    return app.send_static_file("index.html")


@app.get("/health")
def health():
    return "ok\n"


if __name__ == "__main__":
    app.run(host="0.0.0.0", port=8000)
