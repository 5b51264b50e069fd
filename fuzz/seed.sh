#!/bin/sh
# Writes the seed corpora, fuzz/seeds/<target>/, from the repository's recipes, locks and
# pylock files and from small generated inputs (.debs, wheels, deflate streams, tar layers,
# Packages indices). Deterministic; run from anywhere. Needs python3 (standard library only).
# The seeds are committed; run this again after changing it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
exec python3 - "$here" <<'PY'
import gzip, hashlib, io, json, lzma, os, shutil, struct, sys, tarfile, zipfile, zlib

fuzz = sys.argv[1]
repo = os.path.dirname(fuzz)
seeds = os.path.join(fuzz, "seeds")
shutil.rmtree(seeds, ignore_errors=True)

def put(target, name, data):
    d = os.path.join(seeds, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)

def read(path):
    with open(os.path.join(repo, path), "rb") as f:
        return f.read()

H = "a" * 64
H2 = "0123456789abcdef" * 4

# --- recipe: the repository's recipes, and a few small ones.
for name in sorted(os.listdir(os.path.join(repo, "recipes"))):
    if name.endswith(".toml"):
        put("recipe", name, read(os.path.join("recipes", name)))
put("recipe", "layers.toml", """[image]
name = "example.com/fuzz/app"
tag = "1"
platform = "linux/amd64"

[base]
image = "docker.io/library/debian:bookworm-slim"

[[layer]]
name = "app"
src = "app"
dest = "/app"
ignore = ["*.log", "!keep.log"]
owner = "1000:1000"

[[layer]]
name = "one"
src = "app/main.py"
dest = "/srv/main.py"
ignore-file = "ignore"

[config]
entrypoint = ["/usr/bin/python3", "/app/main.py"]
env = { LANG = "C.UTF-8" }
workdir = "/app"
user = "1000"
ports = ["8080/tcp"]
labels = { "org.example" = "x" }

[[test]]
name = "smoke"
run = ["python3", "-c", "print(1)"]
""")

# --- lock: the repository's locks cut to two packages and two wheels, and one with every table.
def cut(text, keep=2):
    out, count, skip = [], {}, False
    for line in text.splitlines(keepends=True):
        if line.startswith("["):
            count[line] = count.get(line, 0) + 1
            skip = line.startswith("[[") and count[line] > keep
        if not skip:
            out.append(line)
    return "".join(out)
for p in ["recipes/bookworm-python.lock", "recipes/cupy-bookworm.lock"]:
    put("lock", os.path.basename(p), cut(read(p).decode()))
put("lock", "full.lock", f"""version = 1

[base]
reference = "docker.io/library/debian:bookworm-slim"
platform = "linux/amd64"
index-digest = "sha256:{H}"
manifest-digest = "sha256:{H2}"

[apt]
architecture = "amd64"
requests = ["python3"]

[[apt.source]]
url = "https://snapshot.debian.org/archive/debian"
suite = "bookworm"
components = ["main", "contrib"]
snapshot = "20240301T000000Z"

[[apt.package]]
name = "python3"
version = "3.11.2-1+b1"
architecture = "amd64"
filename = "pool/main/p/python3/python3_3.11.2-1+b1_amd64.deb"
size = 26456
sha256 = "sha256:{H}"
source-url = "https://snapshot.debian.org/archive/debian/20240301T000000Z"

[python]
url = "https://example.com/cpython-3.11.9-x86_64.tar.gz"
sha256 = "sha256:{H2}"

[python-packages]
file = "pylock.toml"
sha256 = "sha256:{H}"
target = "cp311-x86_64-glibc2.36"

[[wheel]]
name = "numpy"
version = "2.1.0"
filename = "numpy-2.1.0-cp311-cp311-manylinux_2_17_x86_64.whl"
url = "https://files.example/numpy-2.1.0-cp311-cp311-manylinux_2_17_x86_64.whl"
size = 100
sha256 = "sha256:{H2}"
""")

# --- Packages / control text.
def entry(name, version, arch="amd64", extra=""):
    return (f"Package: {name}\nVersion: {version}\nArchitecture: {arch}\n{extra}"
            f"Filename: pool/main/{name[0]}/{name}/{name}_{version}_{arch}.deb\nSize: 1234\n"
            f"SHA256: {H}\nDescription: {name}\n a long description\n .\n more\n\n")
packages = (entry("python3", "3.11.2-1+b1", extra="Multi-Arch: allowed\nPre-Depends: dpkg (>= 1.17.5)\nDepends: python3.11 (>= 3.11.2-1~), libpython3-stdlib (= 3.11.2-1+b1)\nProvides: python3-profiler, python3-supported-min (= 3.11)\n")
            + entry("python3.11", "3.11.2-6", extra="Depends: libc6 (>= 2.34) | libc6-udeb, tzdata [!amd64] <!nocheck>\n")
            + entry("libc6", "2.36-9+deb12u4", extra="Multi-Arch: same\nDepends: libgcc-s1\nBreaks: hurd (<< 1:0.9.git20170910-1)\n")
            + entry("libgcc-s1", "12.2.0-14", extra="Provides: libgcc1 (= 1:12.2.0-14)\n")
            + entry("tzdata", "2024a-0+deb12u1", arch="all", extra="Multi-Arch: foreign\n")
            + entry("dpkg", "1.21.22") + entry("libpython3-stdlib", "3.11.2-1+b1")
            + entry("other", "1.0", arch="arm64"))
for i, comp in enumerate([lambda b: b, gzip.compress, lzma.compress]):
    put("apt_packages", f"packages{i}", bytes([i]) + comp(packages.encode()))
put("apt_packages", "one", b"\x00" + entry("a", "1:2.0~rc1-3", extra="Depends: b:any, c (<< 2)\n").encode())
put("apt_control", "packages", packages)
put("apt_control", "status", "Package: libc6\nStatus: install ok installed\nVersion: 2.36-9\nProvides: libc6-udeb (= 2.36)\n\n"
    "Package: gone\nStatus: deinstall ok config-files\nVersion: 1.0\n\n# comment\nPackage: x\nVersion: 0:1.0-1\n")
put("apt_control", "versions", "1.0~rc1-1\n2:1.0+dfsg-3ubuntu1~22.04.1\n1.0.0a\nPackage: p\nDepends: a (>= 1.0) | b, c:native\nProvides: d (= 2)\n")
put("apt_control", "crlf", "Package: a\r\nVersion: 1\r\n\r\nPackage: b\r\nDescription: x\r\n y\r\n")

# --- Release / InRelease.
release = f"""Origin: Debian
Label: Debian
Suite: stable
Codename: bookworm
Date: Sat, 10 Feb 2024 10:00:00 UTC
Architectures: amd64 arm64
Components: main contrib
SHA256:
 {H} 1234 main/binary-amd64/Packages
 {H2} 567 main/binary-amd64/Packages.xz
 {H.upper()} 89 contrib/binary-all/Packages.gz
"""
put("apt_release", "Release", release)
put("apt_release", "InRelease", "-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA256\n\n" + release.replace("\n-", "\n- -")
    + "-----BEGIN PGP SIGNATURE-----\n\niQEzBAEBCAAdFiEEAAAAAAAAAAAAAAAAAAAAAAAAAAAFAmXHSgAACgkQAAAAAAAAAAA=\n=AAAA\n-----END PGP SIGNATURE-----\n")

# --- tar helpers.
def tar(members, fmt=tarfile.GNU_FORMAT):
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=fmt) as t:
        for m in members:
            kind, name = m[0], m[1]
            ti = tarfile.TarInfo(name)
            ti.mtime = 0
            if kind == "dir":
                ti.type, ti.mode = tarfile.DIRTYPE, 0o755
                t.addfile(ti)
            elif kind == "file":
                data = m[2] if isinstance(m[2], bytes) else m[2].encode()
                ti.size, ti.mode = len(data), (m[3] if len(m) > 3 else 0o644)
                t.addfile(ti, io.BytesIO(data))
            elif kind in ("sym", "hard"):
                ti.type = tarfile.SYMTYPE if kind == "sym" else tarfile.LNKTYPE
                ti.linkname = m[2]
                t.addfile(ti)
    return b.getvalue()

# --- apt_base: a base layer.
put("apt_base", "base", tar([
    ("sym", "bin", "usr/bin"), ("sym", "lib", "usr/lib"), ("dir", "usr/"), ("dir", "usr/bin/"),
    ("file", "usr/bin/python3.11", "#!ELF", 0o755), ("sym", "usr/bin/python3", "python3.11"),
    ("dir", "var/lib/dpkg/"), ("file", "var/lib/dpkg/status", "Package: libc6\nStatus: install ok installed\nVersion: 2.36-9\n\nPackage: old\nStatus: purge ok not-installed\nVersion: 1\n"),
    ("file", "var/lib/dpkg/status.d/base-files", "Package: base-files\nVersion: 12.4\n"),
    ("file", "var/lib/dpkg/status.d/base-files.md5sums", "d41d8cd98f00b204e9800998ecf8427e  etc/x\n"),
    ("file", "usr/lib/x86_64-linux-gnu/libc-2.31.so", "ELF"),
    ("file", "usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30", "ELF"),
    ("sym", "usr/lib/x86_64-linux-gnu/libstdc++.so.6", "libstdc++.so.6.0.30"),
    ("hard", "usr/lib/x86_64-linux-gnu/libz.so.1", "usr/lib/x86_64-linux-gnu/libc-2.31.so"),
    ("file", "opt/.wh.gone", ""), ("file", "etc/.wh..wh..opq", ""),
]))

# --- tar_headers: the first byte picks the record bound (0: 64, 1: 512, 2: 4096, 3: 1 MiB;
# bit 7: unpack too), the rest is a tar with PAX / GNU records.
def raw_header(name, size, typ, magic=b"ustar\x0000", prefix=b""):
    h = bytearray(512)
    h[0:len(name)] = name
    h[100:108] = b"0000644\x00"
    h[108:116] = b"0000000\x00"
    h[116:124] = b"0000000\x00"
    h[124:136] = b"%011o\x00" % size
    h[136:148] = b"00000000000\x00"
    h[156:157] = typ
    h[257:265] = magic
    h[345:345 + len(prefix)] = prefix
    h[148:156] = b" " * 8
    h[148:156] = b"%06o\x00 " % sum(h)
    return bytes(h)
def blocks(data):
    return data + b"\0" * (-len(data) % 512)
def pax_rec(key, value):
    body = b" %s=%s\n" % (key, value)
    n = len(body) + 1
    while len(b"%d" % n + body) != n:
        n += 1
    return b"%d" % n + body
long = "d/" * 150 + "file"
gnu_long = tar([("file", long, "x"), ("sym", "l", "t/" * 80 + "x"), ("file", "short", "abc")])
pax_long = tar([("file", long, "x"), ("sym", "l", "t/" * 80 + "x"), ("file", "short", "abc")], tarfile.PAX_FORMAT)
for pick in (0, 1, 3, 0x83):
    put("tar_headers", f"gnu-long-{pick:02x}", bytes([pick]) + gnu_long)
    put("tar_headers", f"pax-long-{pick:02x}", bytes([pick]) + pax_long)
# Go's writer: the size in the PAX record, 0 in the header.
rec = pax_rec(b"size", b"2000")
pax_size = (raw_header(b"PaxHeaders/big", len(rec), b"x") + blocks(rec)
            + raw_header(b"big", 0, b"0") + blocks(b"\x07" * 2000)
            + raw_header(b"after", 1, b"0") + blocks(b"a") + b"\0" * 1024)
put("tar_headers", "pax-size", b"\x03" + pax_size)
# A global header, a PAX record near 4096 bytes, a ustar prefix.
rec = pax_rec(b"comment", b"c" * 4000)
misc = (raw_header(b"pax_global_header", len(rec), b"g") + blocks(rec)
        + raw_header(b"PaxHeaders/x", len(rec), b"x") + blocks(rec)
        + raw_header(b"name", 1, b"0", prefix=b"some/prefix") + blocks(b"n") + b"\0" * 1024)
put("tar_headers", "misc-2", b"\x02" + misc)
put("tar_headers", "misc-3", b"\x03" + misc)
# GNU sparse: two chunks, the second in an extension block.
g = bytearray(raw_header(b"sparse", 1024, b"S", magic=b"ustar  \x00"))
g[386:398] = b"%011o\x00" % 0
g[398:410] = b"%011o\x00" % 512
g[482] = 1
g[483:495] = b"%011o\x00" % 4096
g[148:156] = b" " * 8
g[148:156] = b"%06o\x00 " % sum(g)
ext = bytearray(512)
ext[0:12] = b"%011o\x00" % 3584
ext[12:24] = b"%011o\x00" % 512
sparse = bytes(g) + bytes(ext) + b"\x01" * 512 + b"\x02" * 512 + raw_header(b"b", 1, b"0") + blocks(b"b") + b"\0" * 1024
put("tar_headers", "sparse", b"\x03" + sparse)
# Records declaring far more than they hold.
for typ, name in ((b"x", "pax"), (b"L", "longname"), (b"K", "longlink"), (b"g", "global")):
    put("tar_headers", f"huge-{name}", b"\x03" + raw_header(b"././@LongLink", 1500000000, typ, magic=b"ustar  \x00") + b"x" * 4096)

# --- deb: .debs of package fuzz 1.0 amd64 (what the target's lock says).
def ar(members):
    out = b"!<arch>\n"
    for name, data in members:
        out += f"{name:<16}{0:<12}{0:<6}{0:<6}{'100644':<8}{len(data):<10}`\n".encode()
        out += data + (b"\n" if len(data) % 2 else b"")
    return out
control = "Package: fuzz\nVersion: 1.0\nArchitecture: amd64\nMaintainer: x <x@example.com>\nDepends: libc6\nDescription: fuzz\n it is\n"
md5 = "d41d8cd98f00b204e9800998ecf8427e  ./usr/bin/fuzz\n0cc175b9c0f1b6a831c399e269772661  bin/tool\n"
ctl = tar([("file", "./control", control), ("file", "./md5sums", md5), ("file", "./postinst", "#!/bin/sh\n", 0o755)])
data_members = [
    ("dir", "./"), ("dir", "./usr/"), ("dir", "./usr/bin/"), ("file", "./usr/bin/fuzz", "#!/bin/sh\necho fuzz\n", 0o755),
    ("dir", "./bin/"), ("file", "./bin/tool", "a"), ("hard", "./usr/bin/fuzz2", "./usr/bin/fuzz"),
    ("sym", "./usr/bin/fz", "fuzz"), ("dir", "./usr/share/"), ("dir", "./usr/share/ca-certificates/"),
    ("file", "./usr/share/ca-certificates/x.crt", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----"),
]
data_tar = tar(data_members)
put("deb", "plain.deb", ar([("debian-binary", b"2.0\n"), ("control.tar", ctl), ("data.tar", data_tar)]))
put("deb", "gz.deb", ar([("debian-binary", b"2.0\n"), ("control.tar.gz", gzip.compress(ctl, mtime=0)), ("data.tar.gz", gzip.compress(data_tar, mtime=0))]))
put("deb", "xz.deb", ar([("debian-binary", b"2.0\n"), ("control.tar.xz", lzma.compress(ctl)), ("data.tar.xz", lzma.compress(data_tar))]))
put("deb", "pax.deb", ar([("debian-binary", b"2.0\n"), ("control.tar", ctl), ("data.tar", tar(data_members[:4], tarfile.PAX_FORMAT))]))

# --- dist_info: RECORD, entry_points.txt, WHEEL, and wheel file names.
put("dist_info", "RECORD", f"""pkg/__init__.py,sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0
pkg/mod.py,sha256=n4bQgYhMfWWaL-qgxVrQFaO_TxsrC4Is0V1sFbDwCgg,12
"pkg/with,comma.py",,
"pkg/quo""te.py",sha256=n4bQgYhMfWWaL-qgxVrQFaO_TxsrC4Is0V1sFbDwCgg=,
pkg-1.0.dist-info/RECORD,,
""")
put("dist_info", "entry_points.txt", """[console_scripts]
fuzz = pkg.cli:main
fuzz-gui = pkg.gui:run [gui]

[gui_scripts]
fuzzw=pkg.gui:main

[other]
x = y
# comment
""")
put("dist_info", "WHEEL", "Wheel-Version: 1.0\nGenerator: bdist_wheel (0.42.0)\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
put("dist_info", "names", "numpy-2.1.0-1-cp311-cp311.abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl\n")
put("dist_info", "shebang", "/opt/a path/with spaces/python3\n")

# --- wheel: small wheels of fuzz 1.0.
def wheel(files, compress=zipfile.ZIP_DEFLATED, record=True):
    b = io.BytesIO()
    rows = []
    with zipfile.ZipFile(b, "w", compress) as z:
        for name, data, mode in files:
            data = data if isinstance(data, bytes) else data.encode()
            zi = zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0))
            zi.external_attr = mode << 16
            zi.compress_type = compress
            z.writestr(zi, data)
            digest = hashlib.sha256(data).digest()
            import base64
            rows.append(f"{name},sha256={base64.urlsafe_b64encode(digest).rstrip(b'=').decode()},{len(data)}")
        if record:
            rows.append("fuzz-1.0.dist-info/RECORD,,")
            zi = zipfile.ZipInfo("fuzz-1.0.dist-info/RECORD", (1980, 1, 1, 0, 0, 0))
            z.writestr(zi, "\n".join(rows) + "\n")
    return b.getvalue()
base_files = [
    ("fuzz/__init__.py", "", 0o644),
    ("fuzz/cli.py", "def main():\n    print('fuzz')\n", 0o644),
    ("fuzz-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: fuzz\nVersion: 1.0\n", 0o644),
    ("fuzz-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n", 0o644),
    ("fuzz-1.0.dist-info/entry_points.txt", "[console_scripts]\nfuzz = fuzz.cli:main\n", 0o644),
    ("fuzz-1.0.data/scripts/fuzz-sh", "#!python\nprint(1)\n", 0o755),
    ("fuzz-1.0.data/data/share/fuzz.txt", "data\n", 0o644),
]
put("wheel", "small.whl", wheel(base_files))
put("wheel", "stored.whl", wheel(base_files, zipfile.ZIP_STORED))
put("wheel", "large.whl", wheel(base_files + [("fuzz/big.txt", "".join(f"line {i}\n" for i in 2000 * [0, 1, 2]), 0o644)]))

# --- markers / requirements / pylock.
put("markers", "markers", """python_version >= "3.9" and sys_platform == 'linux'
(platform_machine == "x86_64" or platform_machine == 'aarch64') and extra == "GPU"
'gpu' in extras and "dev" not in dependency_groups
implementation_name == "cpython" and python_full_version ~= "3.11.0"
1!2.0.0rc1.post2.dev3+local.7
>=3.9, <4, !=3.10.*
===3.11.0
~=2.2
""")
put("markers", "versions", "1.0\n1.0.post1\n1.0a1\n1.0-1\nv1.0RC1\n1.0.dev0\n1.0+abc.1\n1.0.0\n")
put("requirements", "requirements.txt", f"""# comment
--index-url https://pypi.org/simple
numpy==2.1.0 \\
    --hash=sha256:{H} \\
    --hash=sha256:{H2}
requests[socks,security]==2.32.3 ; python_version >= "3.8" --hash=sha256:{H}
typing-extensions===4.12.2 --hash sha256:{H.upper()} --hash=md5:abc
""")
for p in ["recipes/cupy-bookworm/pylock.toml", "recipes/python-cuda-images/pylock.small.toml"]:
    put("pylock", os.path.basename(os.path.dirname(p)) + ".toml", read(p))
put("pylock", "small.toml", f"""lock-version = "1.0"
requires-python = ">=3.9"
environments = ["sys_platform == 'linux'"]
created-by = "fuzz"

[[packages]]
name = "numpy"
version = "2.1.0"
marker = "python_version >= '3.10'"
requires-python = ">=3.10"
wheels = [
  {{ url = "https://x/numpy-2.1.0-cp311-cp311-manylinux_2_17_x86_64.whl", hashes = {{ sha256 = "{H}" }} }},
  {{ name = "numpy-2.1.0-cp312-cp312-manylinux_2_17_x86_64.whl", path = "w/numpy.whl", size = 3, hashes = {{ sha256 = "{H2}" }} }},
]

[[packages]]
name = "six"
sdist = {{ url = "https://x/six-1.0.tar.gz", hashes = {{ sha256 = "{H}" }} }}
wheels = [{{ url = "https://x/six-1.16.0-py2.py3-none-any.whl%3F?x=1#f", hashes = {{ sha256 = "{H}" }} }}]
""")

# --- image_json: manifests, indexes, configs (first byte: the reader).
desc = {"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": f"sha256:{H}", "size": 32}
cfg = {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": f"sha256:{H2}", "size": 2}
manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": cfg, "layers": [desc, dict(desc, annotations={"a": "b"})],
            "annotations": {"org.opencontainers.image.created": "1970-01-01T00:00:00Z"}}
index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
         "manifests": [dict(cfg, mediaType="application/vnd.oci.image.manifest.v1+json",
                            platform={"os": "linux", "architecture": "arm64", "variant": "v8"},
                            annotations={"org.opencontainers.image.ref.name": "latest"}),
                       dict(cfg, artifactType="application/spdx+json")]}
config = {"created": "1970-01-01T00:00:00Z", "architecture": "amd64", "os": "linux",
          "config": {"Env": ["PATH=/usr/bin"], "Entrypoint": ["/bin/sh"], "Cmd": ["-c", "true"],
                     "WorkingDir": "/", "User": "0", "Labels": {"x": "y"},
                     "ExposedPorts": {"80/tcp": {}}, "StopSignal": "SIGTERM"},
          "rootfs": {"type": "layers", "diff_ids": [f"sha256:{H}"]},
          "history": [{"created_by": "ocibuild", "empty_layer": True}, {"comment": "x"}]}
for i, doc in [(0, manifest), (1, manifest), (1, index), (2, index), (3, manifest), (4, manifest), (5, index), (6, config)]:
    put("image_json", f"doc{i}-{len(json.dumps(doc))}", bytes([i]) + json.dumps(doc).encode())

# --- registry: references, challenges, scopes, Retry-After.
put("registry", "lines", """docker.io/library/debian:bookworm
localhost:5000/a/b@sha256:""" + H + """
ubuntu
ghcr.io/owner/repo:v1.2.3@sha256:""" + H2 + """
Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/debian:pull"
Basic realm="x", Bearer realm="https://h/t", error="insufficient_scope"
repository:a/b:pull,push repository:c:pull registry:catalog:*
Wed, 21 Oct 2015 07:28:00 GMT
120
https://user:secret@example.com/v2/?token=abc
""")

# --- splice: raw deflate streams (first byte: how they are read).
def raw_deflate(data, level, strategy=zlib.Z_DEFAULT_STRATEGY):
    c = zlib.compressobj(level, zlib.DEFLATED, -15, 8, strategy)
    return c.compress(data) + c.flush()
text = "".join(f"{i % 97} the quick brown fox\n" for i in range(3000)).encode()
for i, (data, level, strat) in enumerate([
        (text, 6, zlib.Z_DEFAULT_STRATEGY), (text, 1, zlib.Z_DEFAULT_STRATEGY), (text[:5000], 9, zlib.Z_DEFAULT_STRATEGY),
        (text, 6, zlib.Z_FIXED), (text[:17000], 6, zlib.Z_HUFFMAN_ONLY), (bytes(20000), 6, zlib.Z_RLE), (text[:3000], 0, 0), (b"", 6, 0)]):
    put("splice", f"deflate{i}", bytes([i]) + raw_deflate(data, level, strat))

total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(seeds) for f in fs)
print(f"seeds: {sum(len(fs) for _, _, fs in os.walk(seeds))} files, {total} bytes in {seeds}")
PY
