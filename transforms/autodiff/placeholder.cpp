// Placeholder so the library has a source; delete when the folder has real code.
namespace tirc { void placeholder_transforms_autodiff() {} }
