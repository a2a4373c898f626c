"""What moves together: the dependency closure of each release, from metadata only.

index.py reads one package's metadata at one version from the package index pip is configured
for (or the `package-index` setting); source.py keeps what it read in the tool's cache, per
package version, so that a closure once computed is computed again offline; walk.py follows
SGLang's requirements (its wheel's METADATA, with the extras the project installs) through
every exact pin, to a bounded depth and count, on the platforms the project builds for;
delta.py compares the closures of the two releases and says which chain brings each move.
Nothing is installed and no package's code is run.
"""
