//! Default index, archive and registry locations, in one place.

/// PyPI's simple repository API (PEP 691 JSON, PEP 503 HTML).
pub const PYPI_SIMPLE: &str = "https://pypi.org/simple";

/// The Debian archive (what `recipes/bookworm-python.toml` names).
pub const DEBIAN_ARCHIVE: &str = "https://deb.debian.org/debian";

/// The registry a reference without a host means (Docker Hub).
pub const DEFAULT_REGISTRY: &str = "docker.io";

/// Where Docker Hub's registry API is actually served.
pub const DOCKER_HUB_API_HOST: &str = "registry-1.docker.io";

/// The Ubuntu archive (amd64 and i386; what `recipes/python-cuda-images.toml` names), for
/// `ocibuild import`'s `[[apt.source]]` of an Ubuntu-based image.
pub const UBUNTU_ARCHIVE: &str = "http://archive.ubuntu.com/ubuntu";

/// The Ubuntu archive for the other architectures (arm64, ppc64el, s390x, riscv64).
pub const UBUNTU_PORTS: &str = "http://ports.ubuntu.com/ubuntu-ports";
