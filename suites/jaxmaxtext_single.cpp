#include "suite_main.hpp"

int main(int argc, char** argv) {
  return cvs::suites::run_suite(argc, argv, "jaxmaxtext_single", cvs::Mode::Single);
}
