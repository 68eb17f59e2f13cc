#!/bin/sh
# build-deb.sh TARBALL OUTDIR - build the Debian package from a `make dist` tarball.
#
# dpkg-buildpackage wants debian/ at the top of the source tree, and the tree it builds in
# is changed by the build; so the tarball is unpacked in a scratch directory, this folder
# (packaging/debian, shipped in the tarball) is copied to debian/ there, and the results
# (.deb, .buildinfo, .changes) are moved to OUTDIR. The test suite is not run again
# (DEB_BUILD_OPTIONS=nocheck): `make check` does that. Needs debhelper and dpkg-dev
# (`make deb` installs them through ./bootstrap.sh deps).
set -eu
tarball=$1
outdir=$2
case $tarball in /*) ;; *) tarball=$(pwd)/$tarball ;; esac
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)

work=$(mktemp -d "${TMPDIR:-/tmp}/logferry-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
tar -xzf "$tarball" -C "$work"
src=$(cd "$work" && ls -d logferry-*/)
src=${src%/}
version=${src#logferry-}
cp "$tarball" "$work/logferry_$version.orig.tar.gz"
cp -R "$work/$src/packaging/debian" "$work/$src/debian"
rm -f "$work/$src/debian/build-deb.sh"

debversion=$(cd "$work/$src" && dpkg-parsechangelog -S Version)
if [ "${debversion%-*}" != "$version" ]; then
    echo "build-deb.sh: debian/changelog is at $debversion, the tarball at $version;" \
        "add a changelog entry (dch -v $version-1)" >&2
    exit 1
fi

(cd "$work/$src" && DEB_BUILD_OPTIONS="nocheck ${DEB_BUILD_OPTIONS:-}" \
    dpkg-buildpackage -b -us -uc -Pnocheck)
mv "$work"/*.deb "$work"/*.buildinfo "$work"/*.changes "$outdir"/
ls "$outdir"/*.deb
