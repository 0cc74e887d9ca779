# xstream-node: a venv in /opt/xstream holding the host-built wheelhouse (deps/ keyed by
# requirements/runtime.txt, project/ = the xstream wheel), entrypoint `xstream`.
# Everything but the project wheel comes first, so a source change rebuilds three steps only.
# Data lives in /data, owned by the unprivileged user xstream (uid and gid 10001), so a fresh
# named volume (compose) or a PVC with fsGroup 10001 (Kubernetes) is writable.
ARG BASE
FROM ${BASE}
RUN groupadd --system --gid 10001 xstream \
 && useradd --system --uid 10001 --gid 10001 --home-dir /data --shell /usr/sbin/nologin xstream \
 && mkdir -p /data && chown xstream:xstream /data \
 && python3 -m venv /opt/xstream
ENV PATH=/opt/xstream/bin:$PATH PYTHONUNBUFFERED=1
COPY deps/ /tmp/wheels/deps/
RUN pip install -q --no-index --find-links /tmp/wheels/deps /tmp/wheels/deps/*.whl \
 && rm -rf /tmp/wheels
# Executable in the build context (scripts/images.sh copies them with their modes).
COPY healthcheck.py /usr/local/bin/xstream-healthcheck
COPY start.sh /usr/local/bin/xstream-start
WORKDIR /data
VOLUME ["/data"]
EXPOSE 7700 9700
ENTRYPOINT ["xstream"]
CMD ["--help"]
COPY project/ /tmp/wheels/project/
# The server's install, xstream[server]: every dependency is already in place from deps/, and
# --no-index makes a missing one fail the build rather than download it.
RUN pip install -q --no-index "$(echo /tmp/wheels/project/*.whl)[server]" && rm -rf /tmp/wheels
# The engine build the wheel holds (scripts/images.sh: compiled, or pure when the host could not
# compile it): a compiled one that does not load here fails the image's build.
ARG ENGINE=pure
RUN XSTREAM_ENGINE=$ENGINE python -c 'from xstream.builds import ENGINE as e; print("engine:", e.build())'
USER xstream
