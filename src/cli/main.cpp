// croq's entry point: everything happens in cli::run.
#include <iostream>

#include "cli/cli.hpp"

int main(int argc, char** argv) { return croq::cli::run(argc, argv, std::cout, std::cerr); }
