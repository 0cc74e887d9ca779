# xstream-base: Debian bookworm (debootstrap minbase, imported by scripts/images.sh as
# ROOTFS) plus Debian's python3, etcd-server and strace (the drills' EIO injection). No registry is needed: FROM names a local
# image. Its tag is a hash of this file, packages.txt and the script's version.
ARG ROOTFS
FROM ${ROOTFS}
ENV DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8
COPY packages.txt /tmp/packages.txt
# Security updates as well as the release; the lists are dropped to keep the image small.
RUN echo 'deb http://deb.debian.org/debian bookworm-updates main' >> /etc/apt/sources.list \
 && echo 'deb http://deb.debian.org/debian-security bookworm-security main' >> /etc/apt/sources.list \
 && apt-get update -q \
 && apt-get install -y -q --no-install-recommends $(grep -v '^#' /tmp/packages.txt) \
 && apt-get clean && rm -rf /var/lib/apt/lists/* /tmp/packages.txt
# etcd-server's package starts nothing in a container; `etcd` is run as a command.
CMD ["/bin/bash"]
