// Symbols of the C++ API stay visible when the library hides its internals.
#pragma once

#define HORA_API __attribute__((visibility("default")))
