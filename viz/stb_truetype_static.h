#pragma once
// stb_truetype (Debian's libstb-dev) compiled into the including file as static functions, with the
// warnings of its single-header code silenced there: ImGui's own copy (imstb_truetype.h) links into
// the GUI beside it, and the test that checks the figure text keeps a copy of its own as the
// reference metrics. HIPSTUDIO_HAVE_TRUETYPE says whether the header was found.
#if __has_include(<stb/stb_truetype.h>)
#define HIPSTUDIO_HAVE_TRUETYPE 1
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wsign-conversion"
#pragma GCC diagnostic ignored "-Wold-style-cast"
#pragma GCC diagnostic ignored "-Wcast-qual"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wdouble-promotion"
#pragma GCC diagnostic ignored "-Wuseless-cast"
#pragma GCC diagnostic ignored "-Wfloat-conversion"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif
#define STBTT_STATIC
#define STB_TRUETYPE_IMPLEMENTATION
#include <stb/stb_truetype.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#else
#define HIPSTUDIO_HAVE_TRUETYPE 0
#endif
