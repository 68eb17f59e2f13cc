# LF_SONAME(VARIABLE, PKG-CONFIG-MODULE, LIBRARY, FALLBACK)
# ---------------------------------------------------------
# The soname of LIBRARY (libcurl, ...) as PKG-CONFIG-MODULE's libdir holds it, read from its
# development symlink with objdump; FALLBACK when that cannot be read. Defines VARIABLE in
# config.h (a string) and substitutes it. logferry loads these libraries with dlopen() when
# an output needs them (src/output/netlib.c), so it must name the file the linker would have.
AC_DEFUN([LF_SONAME], [
  AC_MSG_CHECKING([the soname of $2])
  lf_soname=
  lf_libdir=`$PKG_CONFIG --variable=libdir $2 2>/dev/null`
  AS_IF([test -n "$OBJDUMP" && test -f "$lf_libdir/$3.so"],
    [lf_soname=`$OBJDUMP -p "$lf_libdir/$3.so" | sed -n 's/^ *SONAME *//p'`])
  AS_IF([test -z "$lf_soname"], [lf_soname=$4])
  AC_MSG_RESULT([$lf_soname])
  AC_DEFINE_UNQUOTED([$1], ["$lf_soname"], [The soname of $2, loaded when an output needs it.])
  AC_SUBST([$1], [$lf_soname])
])
