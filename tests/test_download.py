"""Downloads against a real HTTP server on 127.0.0.1 serving files this test writes."""

import hashlib
import io
import socket
import tarfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from concur.data.download import download, extract_member
from concur.data.sources import SourceLocator
from concur.errors import DownloadError
from concur.registry.specs import SourceFile

PAYLOAD = b"1 Mary moved to the bathroom.\n2 Where is Mary?\tbathroom\t1\n" * 50


class Server:
    """Routes: path -> (status, content type, body, bytes actually sent or None for all)."""

    def __init__(self):
        self.routes: dict[str, tuple[int, str, bytes, int | None]] = {}
        self.hits: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's naming)
                server.hits.append(self.path)
                if self.path not in server.routes:
                    self.send_error(404, "Not Found")
                    return
                status, content_type, body, sent = server.routes[self.path]
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body if sent is None else body[:sent])
                self.wfile.flush()
                self.close_connection = True

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    running = Server()
    yield running
    running.close()


def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def _leftovers(directory):
    return sorted(path.name for path in directory.iterdir()) if directory.exists() else []


def test_download_verified(server, tmp_path):
    server.routes["/data/qa1.txt"] = (200, "text/plain", PAYLOAD, None)
    destination = tmp_path / "cache" / "qa1.txt"
    assert download(server.url("/data/qa1.txt"), destination, _md5(PAYLOAD)) == _md5(PAYLOAD)
    assert destination.read_bytes() == PAYLOAD
    assert _leftovers(destination.parent) == ["qa1.txt"]


@pytest.mark.parametrize(
    ("route", "problem"),
    [
        ((200, "text/plain", PAYLOAD, None), "md5 mismatch, expected 00000000000000000000000000000000"),
        ((200, "text/plain", PAYLOAD, len(PAYLOAD) // 3), "truncated download"),
        ((200, "text/html", b"<!DOCTYPE html><html><body>Please log in</body></html>", None), "HTML page instead of the data"),
        ((200, "text/plain", b"", None), "empty file"),
    ],
)
def test_bad_downloads_leave_nothing(server, tmp_path, route, problem):
    server.routes["/f.txt"] = route
    destination = tmp_path / "cache" / "f.txt"
    with pytest.raises(DownloadError, match=problem) as info:
        download(server.url("/f.txt"), destination, "0" * 32)
    assert server.url("/f.txt") in str(info.value)
    assert _leftovers(destination.parent) == []


def test_http_error_and_refused_connection(server, tmp_path):
    with pytest.raises(DownloadError, match="HTTP 404"):
        download(server.url("/missing.json"), tmp_path / "x.json", None)
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(DownloadError, match="download failed"):
        download(f"http://127.0.0.1:{port}/x", tmp_path / "y", None)
    assert _leftovers(tmp_path) == []


def _tarball(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_locator_downloads_archive_member_once_then_uses_cache(server, tmp_path):
    member = "tasks_1-20_v1-2/en/qa1_single-supporting-fact_train.txt"
    archive = _tarball({member: PAYLOAD, "tasks_1-20_v1-2/README": b"readme"})
    server.routes["/babi/tasks_1-20_v1-2.tar.gz"] = (200, "application/gzip", archive, None)
    source = SourceFile(
        name="train",
        reader="babi",
        path="babi/en/qa1_train.txt",
        md5=_md5(PAYLOAD),
        archive=server.url("/babi/tasks_1-20_v1-2.tar.gz"),
        archive_md5=_md5(archive),
        member=member,
    )
    locator = SourceLocator((), tmp_path / "cache")
    assert locator.availability(source) == "download"
    located = locator.locate(source)
    assert (located.origin, located.verified) == ("download", True)
    assert located.path.read_bytes() == PAYLOAD
    assert locator.availability(source) == "cache"
    again = locator.locate(source)
    assert again.origin == "cache" and len(server.hits) == 1
    # a corrupted cached copy is replaced by a fresh extraction, not used
    located.path.write_bytes(b"corrupt")
    assert locator.locate(source).path.read_bytes() == PAYLOAD


def test_archive_member_errors(tmp_path):
    archive = tmp_path / "a.tar.gz"
    archive.write_bytes(_tarball({"data/qa1_train.txt": PAYLOAD}))
    with pytest.raises(DownloadError, match="did you mean 'data/qa1_train.txt'"):
        extract_member(archive, "data/qa1_trian.txt", tmp_path / "out.txt", None)
    with pytest.raises(DownloadError, match="has md5"):
        extract_member(archive, "data/qa1_train.txt", tmp_path / "out.txt", "0" * 32)
    assert not (tmp_path / "out.txt").exists()
    broken = tmp_path / "broken.tar.gz"
    broken.write_bytes(archive.read_bytes()[:40])
    with pytest.raises(DownloadError, match="not a readable tar archive"):
        extract_member(broken, "data/qa1_train.txt", tmp_path / "out.txt", None)


def test_download_failure_explains_local_copy(server, tmp_path):
    source = SourceFile(name="test", reader="squad", path="squad/dev-v1.1.json", url=server.url("/nope.json"))
    with pytest.raises(DownloadError, match=r"put it at DIR/squad/dev-v1.1.json and pass --source-dir DIR"):
        SourceLocator((), tmp_path / "cache").locate(source)
