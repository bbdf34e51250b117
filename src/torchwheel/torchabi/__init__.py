"""What torch promises: which release introduced each stable shim (the shipped table and
how it is chosen and updated), which C++ names are libtorch's unstable API, what torch's
own libraries export, and which torch a wheel's metadata says it loads on."""
