"""tilec_build: the Python package's build backend (PEP 517, PEP 660), in the tree and on the
standard library alone, so that `pip install ./python` works offline with whatever is installed
(build isolation or not: it requires nothing; setuptools before 70.1 cannot build a wheel without
the `wheel` package, which a machine without network may lack).

The package is pure Python: the wheel (tilec-VERSION-py3-none-any.whl) holds python/tilec/*.py and
its .dist-info (METADATA from pyproject.toml's [project] table and README.md, WHEEL, RECORD); the
editable wheel holds a .pth naming python/; the sdist, pyproject.toml, README.md, tilec/ and
_build/.  Every file is written with a fixed date, so a build is reproducible.
"""
import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # python/
_EPOCH = (1980, 1, 1, 0, 0, 0)


def _project():
    """pyproject.toml's [project] table: name, version, description, requires-python (strings)."""
    text = open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8").read()
    try:
        import tomllib   # Python 3.11+
        return {k: v for k, v in tomllib.loads(text)["project"].items() if isinstance(v, str)}
    except ImportError:
        pass
    m = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    if not m:
        raise RuntimeError("pyproject.toml has no [project] table")
    return dict(re.findall(r'^([A-Za-z][\w-]*)\s*=\s*"([^"]*)"\s*$', m.group(1), re.M))


def _names(p):
    name, version = p["name"], p["version"]
    return name, version, "%s-%s" % (name.replace("-", "_"), version)


def _metadata(p):
    lines = ["Metadata-Version: 2.1", "Name: " + p["name"], "Version: " + p["version"]]
    if p.get("description"):
        lines.append("Summary: " + p["description"])
    if p.get("requires-python"):
        lines.append("Requires-Python: " + p["requires-python"])
    readme = os.path.join(ROOT, p.get("readme", "README.md"))
    body = ""
    if os.path.exists(readme):
        lines.append("Description-Content-Type: text/markdown")
        body = "\n" + open(readme, encoding="utf-8").read()
    return "\n".join(lines) + "\n" + body


def _wheel_text():
    return "Wheel-Version: 1.0\nGenerator: tilec_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _package_files():
    """(path in the wheel, bytes) of python/tilec/*.py, sorted."""
    pkg = os.path.join(ROOT, "tilec")
    out = []
    for f in sorted(os.listdir(pkg)):
        if f.endswith(".py"):
            with open(os.path.join(pkg, f), "rb") as fh:
                out.append(("tilec/" + f, fh.read()))
    return out


def _write_wheel(directory, files):
    p = _project()
    _, _, stem = _names(p)
    info = stem + ".dist-info"
    files = list(files) + [(info + "/METADATA", _metadata(p).encode()), (info + "/WHEEL", _wheel_text().encode())]
    record = []
    for path, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (path, digest, len(data)))
    record.append(info + "/RECORD,,")
    files.append((info + "/RECORD", ("\n".join(record) + "\n").encode()))
    name = stem + "-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files:
            zi = zipfile.ZipInfo(path, _EPOCH)
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    return name


def _write_metadata(directory):
    p = _project()
    info = _names(p)[2] + ".dist-info"
    os.makedirs(os.path.join(directory, info), exist_ok=True)
    with open(os.path.join(directory, info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata(p))
    with open(os.path.join(directory, info, "WHEEL"), "w", encoding="utf-8") as f:
        f.write(_wheel_text())
    return info


# ---- PEP 517 ----------------------------------------------------------------------------------
def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _write_metadata(metadata_directory)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, _package_files())


def build_sdist(sdist_directory, config_settings=None):
    _, _, stem = _names(_project())
    name = stem + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as t:
        paths = ["pyproject.toml", "README.md"] + [path for path, _ in _package_files()]
        paths += ["_build/" + f for f in sorted(os.listdir(os.path.join(ROOT, "_build"))) if f.endswith(".py")]
        for rel in paths:
            with open(os.path.join(ROOT, rel), "rb") as fh:
                data = fh.read()
            ti = tarfile.TarInfo("%s/%s" % (stem, rel))
            ti.size, ti.mode, ti.mtime = len(data), 0o644, 315532800
            t.addfile(ti, io.BytesIO(data))
    return name


# ---- PEP 660: pip install -e ./python ---------------------------------------------------------
get_requires_for_build_editable = get_requires_for_build_wheel
prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, [("tilec_editable.pth", (ROOT + "\n").encode())])
